package cc_test

import (
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/topo"
)

// The coupling tests run on paths with a real round trip (40 ms, emulated:
// the kernel has no netem) and a drop-tail queue of one bandwidth-delay
// product, the regime the algorithms were designed for. On bare veth (0.1 ms)
// windows stay at a few packets and losses end in timeouts, which measures
// retransmission timers, not coupling.
//
// One window of a drop-tail bottleneck is noisy: loss synchronisation
// decides who backs off, and a single 15 s run of uncoupled Reno measured
// anywhere from 2.4x to 4.2x. Each figure is therefore the mean of
// separate runs, after a warm-up long enough for the windows to settle.
const (
	oneWay = 20 * time.Millisecond
	warmup = 10 * time.Second
	reps   = 2
)

func bdpBytes(rate float64) uint32 { return uint32(rate / 8 * (2 * oneWay).Seconds()) }

// Coupling works: four subflows of one MPTCP connection and one TCP Reno
// flow share one 20 Mbit/s bottleneck. Uncoupled Reno on the subflows takes
// clearly more than the TCP flow; each coupled CC takes about one TCP share.
// All are measured in this one test, side by side.
func TestCouplingSharedBottleneck(t *testing.T) {
	if testing.Short() {
		t.Skip("long: measured transfers")
	}
	const rate = 20e6
	root := testenv.PinRoot(t)
	n := testenv.Net(t, topo.Config{
		Paths:       []int{0, 0, 0, 0},
		Bottlenecks: []topo.Shaping{{RateBits: rate, Delay: oneWay, QueueBytes: bdpBytes(rate), Seed: 1}},
		Subflows:    true,
	})
	measure := func(ccName string) float64 {
		var mp, tcp float64
		for i := 0; i < reps; i++ {
			mbps := run(t, n, []flow{{path: 0, mptcp: true, cc: ccName}, {path: 0, cc: "reno"}}, warmup, 20*time.Second, nil)
			t.Logf("%-22s run %d: MPTCP %5.2f Mbit/s  TCP %5.2f Mbit/s  ratio %.2f", ccName, i+1, mbps[0], mbps[1], mbps[0]/mbps[1])
			mp += mbps[0]
			tcp += mbps[1]
		}
		t.Logf("%-22s mean ratio %.2f", ccName, mp/tcp)
		return mp / tcp
	}

	if r := measure("reno"); r < 1.5 {
		t.Errorf("uncoupled Reno on 4 subflows took %.2fx the TCP flow; expected clearly more (>= 1.5x): the test cannot tell coupling apart", r)
	}
	for _, a := range cc.Algorithms() {
		r := measure(testenv.Load(t, root, a.Name, cc.Params{RSFTarget: cc.DefaultRSFTarget}))
		if r > 1.3 {
			t.Errorf("%s took %.2fx the TCP flow's throughput on a shared bottleneck, want <= 1.3", a.Name, r)
		}
	}
}

// On two disjoint bottlenecks each coupled CC still uses the capacity of
// both: >= 90% of what two TCP flows, one per path, get in the same setup.
func TestCouplingDisjointPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("long: measured transfers")
	}
	const rate = 20e6
	root := testenv.PinRoot(t)
	sh := topo.Shaping{RateBits: rate, Delay: oneWay, QueueBytes: bdpBytes(rate)}
	n := testenv.Net(t, topo.Config{Paths: []int{0, 1}, Bottlenecks: []topo.Shaping{sh, sh}, Subflows: true})

	ref := run(t, n, []flow{{path: 0, cc: "reno"}, {path: 1, cc: "reno"}}, warmup, 10*time.Second, nil)
	capacity := ref[0] + ref[1]
	t.Logf("capacity (two TCP flows): %.2f + %.2f = %.2f Mbit/s", ref[0], ref[1], capacity)
	for _, a := range cc.Algorithms() {
		name := testenv.Load(t, root, a.Name, cc.Params{RSFTarget: cc.DefaultRSFTarget})
		got := run(t, n, []flow{{path: 0, mptcp: true, cc: name}}, warmup, 10*time.Second, nil)[0]
		t.Logf("%-5s %.2f Mbit/s = %.0f%% of capacity", a.Name, got, 100*got/capacity)
		if got < 0.9*capacity {
			t.Errorf("%s used %.2f of %.2f Mbit/s (%.0f%%), want >= 90%%", a.Name, got, capacity, 100*got/capacity)
		}
	}
}

// OLIA moves traffic away from a congested path: path 0 is shared with two
// TCP flows, path 1 is free. OLIA puts clearly less of its traffic on path 0
// than LIA does (Khalili et al.: LIA's non-Pareto-optimality).
func TestOLIAAvoidsCongestedPath(t *testing.T) {
	if testing.Short() {
		t.Skip("long: measured transfers")
	}
	const rate = 10e6
	root := testenv.PinRoot(t)
	sh := topo.Shaping{RateBits: rate, Delay: oneWay, QueueBytes: bdpBytes(rate)}
	n := testenv.Net(t, topo.Config{Paths: []int{0, 1}, Bottlenecks: []topo.Shaping{sh, sh}, Subflows: true})

	share := map[string]float64{}
	for _, algo := range []string{"lia", "olia"} {
		name := testenv.Load(t, root, algo, cc.Params{})
		var p0, p1 float64
		for i := 0; i < reps; i++ {
			var before, after map[int]uint64
			mbps := run(t, n, []flow{{path: 0, mptcp: true, cc: name}, {path: 0, cc: "reno"}, {path: 0, cc: "reno"}},
				warmup, 20*time.Second, func(end bool) {
					if end {
						after = bytesByPath(subflowsOf(t, root, name))
					} else {
						before = bytesByPath(subflowsOf(t, root, name))
					}
				})
			r0, r1 := float64(after[0]-before[0]), float64(after[1]-before[1])
			p0, p1 = p0+r0, p1+r1
			t.Logf("%-4s run %d: %.0f%% of its traffic on the congested path; MPTCP %.2f Mbit/s, TCP %.2f and %.2f Mbit/s",
				algo, i+1, 100*r0/(r0+r1), mbps[0], mbps[1], mbps[2])
		}
		share[algo] = p0 / (p0 + p1)
	}
	t.Logf("on the congested path: LIA %.0f%%, OLIA %.0f%% of their traffic", 100*share["lia"], 100*share["olia"])
	if share["olia"] > 0.75*share["lia"] {
		t.Errorf("OLIA put %.0f%% of its traffic on the congested path, LIA %.0f%%: want OLIA clearly lower (<= 3/4 of LIA's)",
			100*share["olia"], 100*share["lia"])
	}
}
