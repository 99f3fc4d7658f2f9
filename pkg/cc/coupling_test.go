// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/model"
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
// separate runs, after a warm-up long enough for the windows to settle,
// and runs during which the host stole CPU time are repeated (meter).
const (
	oneWay = 20 * time.Millisecond
	warmup = 10 * time.Second
	reps   = 3
	// windowReps: runs per algorithm of the window-split test.
	windowReps = 4
)

func bdpBytes(rate float64) uint32 { return uint32(rate / 8 * (2 * oneWay).Seconds()) }

// Coupling works: four subflows of one MPTCP connection and one TCP Reno
// flow share one 20 Mbit/s bottleneck. Uncoupled Reno on the subflows takes
// clearly more than the TCP flow; each coupled CC takes about one TCP share.
// All are measured in this one test, side by side.
//
// Means measured on a quiet host: uncoupled Reno 2.13x and 2.60x; LIA 0.80
// and 0.93, OLIA 0.57 and 0.78, BALIA 0.75 and 0.77, RSF 0.79 and 1.12 (two
// sessions, 2 and 3 runs). A CI run on a busy host, steal not measured
// then, had Reno 3.81x and LIA 1.64x: such runs are now repeated (meter).
// 1.5x leaves room for the spread and is still well below what uncoupled
// subflows take. Reno must clear 1.6x in the same test, so that the two
// stay apart, and each coupled CC must take less than Reno did. (Reno had
// to clear 1.8x until a CI run measured 1.79x, runs of 1.62-2.03x, while
// the coupled CCs took 0.61-0.90x: the separation was there, the bound sat
// inside Reno's own spread.)
//
// The other direction, RFC 6356's second goal (take no less than one TCP
// flow): each coupled CC must take at least 0.4 of the TCP flow. That is
// far below the goal (docs/results/fairness.md measures the cells where
// the kernel keeps the subflows under it), but it fails a collapse like
// the one issue 12 measured on 4 subflows at 1 ms (OLIA 0.24 to 0.41),
// with room under the lowest mean seen here (OLIA 0.57; 0.45, runs of
// 0.30-0.58, in a run beside other sessions' work on 2026-11-28).
//
// A delay-based CC (wVegas) backs off on the queue the TCP flow fills, so
// it takes less than one share by design: measured 0.33-0.35 (2026-11-28,
// three runs). Its bound is 0.2: it must not starve, nor take more than
// uncoupled Reno.
//
// And against the model (issue 30's goal (b), in a reduced form): the
// kernel cuts what every subflow takes (docs/results/fairness.md), so the
// coupling is judged by what it takes relative to uncoupled Reno on the
// same testbed, next to the same ratio in the model's packet-level
// simulation of this cell (model.ShareAgainstReno: 40 ms, 66-packet
// drop-tail queue, 4 subflows, 4 seeds; about 12 s of CPU before the
// traffic starts). Measured over the model's ratio: LIA 1.13 and 1.21,
// OLIA 1.08 and 1.21, BALIA 0.99 and 1.18, RSF 1.17 and 1.36 (the two
// sessions above); LIA 1.26, OLIA 1.51, BALIA 1.21, RSF 1.20 in a run
// beside two other sessions' work (2026-11-29, uncoupled Reno 2.01). The
// goal asks for 20%; with 3 runs of 20 s, and uncoupled Reno's own mean
// moving by 20% between runs, the bound here is 0.4-2.5x: a coupling that
// takes what uncoupled Reno takes (3-4x the model's ratio) or starves
// fails it. A delay-based CC loses almost nothing, so the kernel's loss
// penalty does not apply to it and dividing by uncoupled Reno would
// inflate it (wVegas: 1.6-1.7x the model's ratio); it is judged on its
// own share against the model's share (0.34 against 0.38: 0.89x; 0.84x
// in the run above), with the same bound.
func TestCouplingSharedBottleneck(t *testing.T) {
	if testing.Short() {
		t.Skip("long: measured transfers")
	}
	const rate = 20e6
	const modelSeeds = 4
	modelShare := func(a model.Algorithm) float64 {
		return mean(model.ShareAgainstReno(a, 4, rate, 2*oneWay, int(bdpBytes(rate)/1500), cc.DefaultRSFTarget, modelSeeds))
	}
	modelReno := modelShare(model.Reno{})
	root := testkernel.PinRoot(t)
	n := testkernel.Net(t, topo.Config{
		Paths:       []int{0, 0, 0, 0},
		Bottlenecks: []topo.Shaping{{RateBits: rate, Delay: oneWay, QueueBytes: bdpBytes(rate), Seed: 1}},
		Subflows:    true,
	})
	m := &meter{t: t}
	measure := func(ccName string) float64 {
		var mp, tcp float64
		for i := 0; i < reps; i++ {
			mbps := m.run(n, []flow{{path: 0, mptcp: true, cc: ccName}, {path: 0, cc: "reno"}}, warmup, 20*time.Second, nil)
			t.Logf("%-22s run %d: MPTCP %5.2f Mbit/s  TCP %5.2f Mbit/s  ratio %.2f", ccName, i+1, mbps[0], mbps[1], mbps[0]/mbps[1])
			mp += mbps[0]
			tcp += mbps[1]
		}
		t.Logf("%-22s mean ratio %.2f", ccName, mp/tcp)
		return mp / tcp
	}

	reno := measure("reno")
	m.check(reno >= 1.6, "uncoupled Reno on 4 subflows took %.2fx the TCP flow; expected clearly more (>= 1.6x): the test cannot tell coupling apart", reno)
	for _, a := range cc.Algorithms() {
		r := measure(testkernel.Load(t, root, a.Name, cc.Params{RSFTarget: cc.DefaultRSFTarget}))
		m.check(r <= 1.5 && r < reno, "%s took %.2fx the TCP flow's throughput on a shared bottleneck, want <= 1.5 and less than uncoupled Reno's %.2fx", a.Name, r, reno)
		least := 0.4
		if a.DelayBased {
			least = 0.2 // it yields the queue by design (algo.Info.DelayBased)
		}
		m.check(r >= least, "%s took %.2fx the TCP flow's throughput on a shared bottleneck, want >= %.1f: a coupled CC must not starve its connection (RFC 6356's second goal is 1)", a.Name, r, least)

		ms := modelShare(model.Of(a.Info))
		got, want, what := r/reno, ms/modelReno, "share over uncoupled Reno's"
		if a.DelayBased {
			got, want, what = r, ms, "share" // the loss penalty does not apply (above)
		}
		t.Logf("%-6s %s %.3f, the model's %.3f: %.2fx the model", a.Name, what, got, want, got/want)
		m.check(got >= 0.4*want && got <= 2.5*want, "%s's %s was %.3f on the testbed and %.3f in the model of this cell (%.2fx), want 0.4-2.5x: the coupling does not take what it is designed to take (issue 30, goal (b))", a.Name, what, got, want, got/want)
	}
}

// On two disjoint bottlenecks each coupled CC still uses the capacity of
// both: >= 85% of the two links' TCP goodput (two TCP flows, one per path,
// measured 99% of it). One path alone would be 50%.
func TestCouplingDisjointPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("long: measured transfers")
	}
	const rate = 20e6
	root := testkernel.PinRoot(t)
	sh := topo.Shaping{RateBits: rate, Delay: oneWay, QueueBytes: bdpBytes(rate)}
	n := testkernel.Net(t, topo.Config{Paths: []int{0, 1}, Bottlenecks: []topo.Shaping{sh, sh}, Subflows: true})

	// Link rates count IP bytes; TCP with timestamps carries 1448 bytes of
	// payload in a 1500-byte packet.
	capacity := 2 * rate * 1448 / 1500 / 1e6
	m := &meter{t: t}
	for _, a := range cc.Algorithms() {
		name := testkernel.Load(t, root, a.Name, cc.Params{RSFTarget: cc.DefaultRSFTarget})
		got := m.run(n, []flow{{path: 0, mptcp: true, cc: name}}, warmup, 10*time.Second, nil)[0]
		t.Logf("%-5s %.2f Mbit/s = %.0f%% of %.2f", a.Name, got, 100*got/capacity, capacity)
		m.check(got >= 0.85*capacity, "%s used %.2f of %.2f Mbit/s (%.0f%%), want >= 85%%", a.Name, got, capacity, 100*got/capacity)
	}
}

// OLIA moves its window to the best path; LIA does not (Khalili et al.: LIA
// is not Pareto-optimal). Both paths lose 0.2% of packets at random; path 0
// is four times as long (160 ms vs 40 ms). LIA keeps about equal windows on
// the two, OLIA puts most of its window on the path with the best
// l_r / rtt_r^2, the short one. The model simulation predicts 47% vs 11% of
// the window on the long path (pkg/model, TestSimOLIAMovesToBestPath).
//
// The test compares windows, sampled from the maps every 100 ms, not bytes:
// what a subflow delivers also depends on the kernel's scheduler, and on
// these lossy paths its head-of-line stalls (a window-2 subflow holding the
// connection's send buffer for seconds) made the byte split vary from 18%
// to 42% for LIA in one scenario, while the window split stayed at 43-47%.
// Measured here: LIA 43-47%, OLIA 15-17% (three runs each).
//
// Single 20 s runs vary widely (LIA 36-56%, OLIA 8-36% in one CI run,
// whose mean of three, 45% against 28%, missed the bound by 0.02), so the
// figures are the means of four runs each.
func TestOLIAMovesWindowToBestPath(t *testing.T) {
	if testing.Short() {
		t.Skip("long: measured transfers")
	}
	const rate = 20e6
	root := testkernel.PinRoot(t)
	long := topo.Shaping{RateBits: rate, Delay: 4 * oneWay, Loss: 0.002, Seed: 1, QueueBytes: bdpBytes(rate) * 4}
	short := topo.Shaping{RateBits: rate, Delay: oneWay, Loss: 0.002, Seed: 2, QueueBytes: bdpBytes(rate)}
	n := testkernel.Net(t, topo.Config{Paths: []int{0, 1}, Bottlenecks: []topo.Shaping{long, short}, Subflows: true})

	m := &meter{t: t}
	share := map[string]float64{}
	for _, algo := range []string{"lia", "olia"} {
		name := testkernel.Load(t, root, algo, cc.Params{})
		var sum [2]float64
		for i := 0; i < windowReps; i++ {
			// The meter may repeat a run: w is the sampler of the kept one.
			var w *windowSampler
			m.run(n, []flow{{path: 0, mptcp: true, cc: name}}, warmup, 20*time.Second, func(end bool) {
				if end {
					w.finish()
				} else {
					w = sampleWindows(root, name, 100*time.Millisecond)
				}
			})
			if err := w.err(); err != nil {
				t.Fatal(err)
			}
			sum[0], sum[1] = sum[0]+w.mean(0), sum[1]+w.mean(1)
			t.Logf("%-4s run %d: mean window %.1f on the long path, %.1f on the short one (%d samples)",
				algo, i+1, w.mean(0), w.mean(1), w.samples())
		}
		share[algo] = sum[0] / (sum[0] + sum[1])
	}
	t.Logf("window on the long path: LIA %.0f%%, OLIA %.0f%%", 100*share["lia"], 100*share["olia"])
	m.check(share["olia"] <= 0.6*share["lia"], "OLIA kept %.0f%% of its window on the long path, LIA %.0f%%: want OLIA clearly lower (<= 0.6 of LIA's)",
		100*share["olia"], 100*share["lia"])
}
