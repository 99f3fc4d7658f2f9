// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"fmt"
	"math"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/bpfreno"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// TestBenchGoodput (make bench) measures what a BPF coupled CC costs against
// the kernel's built-in Reno on the same MPTCP setup: two subflows over
// unshaped veth, maximum goodput and CPU time per gigabyte. Runs alternate
// between the CCs, round after round, so drift on this noisy machine hits
// all of them alike; the table reports each CC's median ratio to Reno in
// the same round, with its 95% interval, and fails a goal only when the
// whole interval is below it.
//
// GOODPUT narrows it for a quick comparison, e.g. "cc=lia rounds=3
// paced=off": the algorithms to load (default all), the rounds (default
// 5) and whether each also runs paced (default on). Built-in Reno and the
// BPF path's Reno always run: every ratio is to them.
func TestBenchGoodput(t *testing.T) {
	testenv.Bench(t)
	const runFor = 5 * time.Second
	rounds, algos, withPaced := parseGoodput(t, os.Getenv("GOODPUT"))
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 0)
	ccs := []string{"reno"}
	label := map[string]string{"reno": "reno (built-in)"}
	// The kernel's Reno through struct_ops: the same algorithm, so what it
	// loses against the built-in one is what the BPF path costs.
	viaBPF, err := bpfreno.Register(testenv.Unique("brb"))
	if err != nil {
		t.Fatal(err)
	}
	defer viaBPF.Close()
	ccs = append(ccs, viaBPF.Name)
	label[viaBPF.Name] = "reno (BPF path)"
	paced := map[string]bool{} // reported, not held to the goal: pacing is the cost measured
	// Each algorithm as loaded by default and with pacing: what pacing
	// costs at tens of Gbit/s, where it runs a timer per burst.
	for _, a := range algos {
		name := testkernel.Load(t, root, a, cc.Params{RSFTarget: cc.DefaultRSFTarget})
		ccs = append(ccs, name)
		label[name] = a + " (BPF)"
		if !withPaced {
			continue
		}
		name = testkernel.Load(t, root, a, cc.Params{RSFTarget: cc.DefaultRSFTarget, Pacing: true})
		ccs = append(ccs, name)
		paced[name] = true
		label[name] = a + " paced"
	}
	srv, err := xfer.ListenWith(n.Server, netip.AddrPortFrom(topo.ServerAddr, 0), true, xfer.ServerOptions{NoVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	// Goodput and CPU first, with the kernel's run-time accounting off:
	// with it on, every BPF call also reads the clock twice, a cost the
	// built-in Reno does not pay, so the BPF rows would carry the
	// instrument's cost. The order rotates each round, so no CC always
	// runs first after a pause or right after another.
	gbps := map[string][]float64{}
	cpuPerGB := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		for i := range ccs {
			name := ccs[(i+r)%len(ccs)]
			busy0 := cpuBusy(t)
			res, err := testkernel.Run(n, srv, xfer.Options{CC: name, For: runFor})
			busy1 := cpuBusy(t)
			if err != nil || !res.Intact {
				t.Fatalf("%s: %v %+v", name, err, res)
			}
			gb := float64(res.Delivered) / 1e9
			gbps[name] = append(gbps[name], gb*8/res.Duration.Seconds())
			cpuPerGB[name] = append(cpuPerGB[name], (busy1-busy0)/gb)
		}
	}

	// Then the programs' cost, with the accounting on, a few rounds each:
	// per call and as a share of the CPU, apart from what the algorithms
	// do to the windows. The accounting's own cost (two clock reads and
	// the trampoline around the program) is in every figure; the floor, a
	// cong_avoid that does nothing through the same path (bpfreno's
	// RegisterFloor), measures it, and the goal holds for what is above it.
	floor, err := bpfreno.RegisterFloor(testenv.Unique("brf"))
	if err != nil {
		t.Fatal(err)
	}
	defer floor.Close()
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		t.Fatalf("enabling BPF run-time stats: %v", err)
	}
	cost := map[string]progCost{}
	costed := append([]string{floor.Name}, ccs...)
	for r := 0; r < costRounds; r++ {
		for i := range costed {
			name := costed[(i+r)%len(costed)]
			cost[name] = cost[name].add(costRun(t, n, srv, name, runFor))
		}
	}
	stats.Close()
	if cost[floor.Name].avoidCalls == 0 {
		t.Fatalf("the floor %s: the kernel accounted no cong_avoid call", floor.Name)
	}
	floorNs := cost[floor.Name].avoidPerCall()

	// Goodput as the ratio to built-in Reno's in the same round, so that
	// drift between rounds cancels; the median of the rounds' ratios with
	// its 95% interval. A goal is missed when the whole interval is below
	// it, met when the median is at or above it, and not told apart from
	// it otherwise.
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d rounds x %v, 2 subflows over unshaped veth: goodput and CPU per GB as medians of each round's ratio to built-in Reno, with 95%% intervals; the BPF columns from %d more rounds with the run-time accounting on\n", rounds, runFor, costRounds)
	fmt.Fprintf(&b, "%-18s %10s %22s %9s %12s %12s %14s %16s %10s\n", "cc", "Gbit/s", "vs reno (95% CI)", "goal", "CPU vs reno", "BPF ns/call", "cong_avoid ns", "above the floor", "BPF % CPU")
	fmt.Fprintf(&b, "%-18s %10s %22s %9s %12s %12s %14.0f %16s %10s\n", "floor (empty)", "-", "-", "-", "-", "-", floorNs, "-", "-")
	for _, name := range ccs {
		g := median(gbps[name])
		gLo, gMed, gHi := medianCI(roundRatios(gbps[name], gbps["reno"]))
		_, cMed, _ := medianCI(roundRatios(cpuPerGB[name], cpuPerGB["reno"]))
		goal := 0.97
		switch {
		case name == "reno":
			goal = 0
		case name == viaBPF.Name:
			goal = 0.98
		case paced[name]:
			goal = 0 // reported, not held to a goal: pacing's cost is what is measured
		}
		verdict := "-"
		if goal > 0 {
			verdict = goalVerdict(gLo, gMed, gHi, goal)
			if verdict == "missed" {
				t.Errorf("%s reached %.1f%% of built-in Reno's goodput (95%% interval %.1f-%.1f%%), goal >= %.0f%%", label[name], 100*gMed, 100*gLo, 100*gHi, 100*goal)
			}
		}
		pc := cost[name]
		perCall, avoid, net, share := "-", "-", "-", "-"
		if pc.calls > 0 {
			perCall = fmt.Sprintf("%.0f", pc.ns/pc.calls)
			share = fmt.Sprintf("%.2f%%", 100*pc.ns/1e9/pc.busy)
		}
		if pc.avoidCalls > 0 {
			avoid = fmt.Sprintf("%.0f", pc.avoidPerCall())
			net = fmt.Sprintf("%.0f", pc.avoidPerCall()-floorNs)
		}
		fmt.Fprintf(&b, "%-18s %10.2f %22s %9s %11.0f%% %12s %14s %16s %10s\n", label[name], g,
			fmt.Sprintf("%.1f%% (%.1f-%.1f)", 100*gMed, 100*gLo, 100*gHi), verdict, 100*cMed, perCall, avoid, net, share)
		if name != "reno" && name != viaBPF.Name && !paced[name] && pc.avoidCalls > 0 && pc.avoidPerCall()-floorNs >= 150 {
			t.Errorf("%s: cong_avoid costs %.0f ns per call above the accounting's floor of %.0f, goal < 150 ns", label[name], pc.avoidPerCall()-floorNs, floorNs)
		}
	}
	t.Log(b.String())
}

// The goodput bench's statistics: the interval of a median, and the
// verdict against a goal.
func TestMedianCI(t *testing.T) {
	v := make([]float64, 20)
	for i := range v {
		v[(i*7)%20] = float64(i) // all of 0..19, shuffled
	}
	if lo, med, hi := medianCI(v); lo != 5 || med != 10 || hi != 14 {
		t.Errorf("20 values 0..19: %v %v %v, want 5 10 14 (the 6th, the median, the 15th)", lo, med, hi)
	}
	if lo, med, hi := medianCI([]float64{3, 1, 2}); lo != 1 || med != 2 || hi != 3 {
		t.Errorf("3 values: %v %v %v, want the whole range around 2", lo, med, hi)
	}
	for _, c := range []struct {
		lo, med, hi float64
		want        string
	}{{0.90, 0.95, 0.96, "missed"}, {0.95, 0.98, 1.01, "met"}, {0.94, 0.96, 0.99, "unclear"}} {
		if got := goalVerdict(c.lo, c.med, c.hi, 0.97); got != c.want {
			t.Errorf("%v-%v-%v against 0.97: %s, want %s", c.lo, c.med, c.hi, got, c.want)
		}
	}
}

// parseGoodput reads GOODPUT (see TestBenchGoodput).
func parseGoodput(t *testing.T, spec string) (rounds int, algos []string, paced bool) {
	rounds, paced = 5, true
	for _, a := range cc.Algorithms() {
		algos = append(algos, a.Name)
	}
	for _, field := range strings.Fields(spec) {
		k, v, _ := strings.Cut(field, "=")
		switch k {
		case "cc":
			algos = strings.Split(v, ",")
		case "rounds":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				t.Fatalf("GOODPUT rounds %q: want a positive number", v)
			}
			rounds = n
		case "paced":
			if v != "on" && v != "off" {
				t.Fatalf("GOODPUT paced %q: want on or off", v)
			}
			paced = v == "on"
		default:
			t.Fatalf("GOODPUT: unknown key %q (cc, rounds, paced)", k)
		}
	}
	return rounds, algos, paced
}

// costRounds is how many runs of each CC the cost figures sum.
const costRounds = 3

// progCost is what one CC's programs cost, by the kernel's run-time
// accounting, and the machine's busy CPU seconds meanwhile.
type progCost struct{ ns, calls, avoidNs, avoidCalls, busy float64 }

func (c progCost) avoidPerCall() float64 { return c.avoidNs / c.avoidCalls }

func (c progCost) add(d progCost) progCost {
	return progCost{c.ns + d.ns, c.calls + d.calls, c.avoidNs + d.avoidNs, c.avoidCalls + d.avoidCalls, c.busy + d.busy}
}

// roundRatios is each round's a over b.
func roundRatios(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] / b[i]
	}
	return out
}

// medianCI is the median of v with a distribution-free 95% interval: the
// order statistics k and n-1-k, k from the binomial's normal
// approximation (for 20 values, the 6th and 15th). With under 6 values
// the interval is the whole range.
func medianCI(v []float64) (lo, med, hi float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	k := int(math.Floor(float64(n)/2 - 1.96*math.Sqrt(float64(n))/2))
	k = max(0, min(k, (n-1)/2))
	return s[k], median(s), s[n-1-k]
}

// goalVerdict says how a ratio's median and interval stand to a goal.
func goalVerdict(lo, med, hi, goal float64) string {
	switch {
	case hi < goal:
		return "missed"
	case med >= goal:
		return "met"
	}
	return "unclear"
}

// costRun runs one transfer with CC name and returns what its programs
// cost (the accounting must be on).
func costRun(t *testing.T, n *topo.Net, srv *xfer.Server, name string, d time.Duration) progCost {
	var c progCost
	rt0 := bpfRunTime(t)
	busy0 := cpuBusy(t)
	res, err := testkernel.Run(n, srv, xfer.Options{CC: name, For: d})
	c.busy = cpuBusy(t) - busy0
	if err != nil || !res.Intact {
		t.Fatalf("%s: %v %+v", name, err, res)
	}
	for prog, rt := range bpfRunTime(t) {
		ns, calls := rt.ns-rt0[prog].ns, rt.calls-rt0[prog].calls
		c.ns += ns
		c.calls += calls
		if isCongAvoid(prog) {
			c.avoidNs += ns
			c.avoidCalls += calls
		}
	}
	return c
}

// runTime is the kernel's run-time accounting of one program.
type runTime struct{ ns, calls float64 }

// bpfRunTime is the kernel's run-time accounting of every mptcp-cc
// congestion-control program and the BPF Reno's, by program name (only
// the CC under test runs at a time, so a difference belongs to it).
func bpfRunTime(t *testing.T) map[string]runTime {
	out := map[string]runTime{}
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return out
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		info, err := p.Info()
		var st *ebpf.ProgramStats
		if err == nil && (strings.HasPrefix(info.Name, "mpcc_") || strings.HasPrefix(info.Name, "bpfreno_") || strings.HasPrefix(info.Name, "bpfnull_")) {
			st, err = p.Stats()
		}
		p.Close()
		if err != nil || st == nil {
			continue
		}
		// Several CCs share the program names: sum them.
		rt := out[info.Name]
		rt.ns += float64(st.Runtime.Nanoseconds())
		rt.calls += float64(st.RunCount)
		out[info.Name] = rt
	}
}

// isCongAvoid says whether a program (its name as the kernel keeps it,
// 15 bytes at most) is a cong_avoid callback.
func isCongAvoid(name string) bool {
	return name == "mpcc_cong_avoid" || strings.HasPrefix(name, "bpfreno_cong_a") || strings.HasPrefix(name, "bpfnull_cong_a")
}

// cpuBusy is the machine's busy CPU time so far, in seconds (all cores:
// the transfer's work is spread over both processes and softirqs).
func cpuBusy(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])[1:]
	var total, idle float64
	for i, v := range f {
		x, _ := strconv.ParseFloat(v, 64)
		total += x
		if i == 3 || i == 4 { // idle, iowait
			idle += x
		}
	}
	return (total - idle) / 100 // USER_HZ
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
