package cc_test

import (
	"fmt"
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
	"github.com/mptcp-cc/mptcp-cc/pkg/bpfreno"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/xfer"
)

// TestBenchGoodput (make bench) measures what a BPF coupled CC costs against
// the kernel's built-in Reno on the same MPTCP setup: two subflows over
// unshaped veth, maximum goodput and CPU time per gigabyte. Runs alternate
// between the CCs, round after round, so drift on this noisy machine hits
// all of them alike; the table reports medians and ratios to Reno.
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

	// The kernel's own accounting of BPF run time separates what the
	// programs cost from what the algorithms do to the windows.
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		t.Fatalf("enabling BPF run-time stats: %v", err)
	}
	defer stats.Close()

	gbps := map[string][]float64{}
	cpuPerGB := map[string][]float64{}
	progNs := map[string]float64{}
	progCalls := map[string]float64{}
	avoidNs := map[string]float64{}
	avoidCalls := map[string]float64{}
	busyTotal := map[string]float64{}
	for r := 0; r < rounds; r++ {
		for _, name := range ccs {
			rt0 := bpfRunTime(t)
			busy0 := cpuBusy(t)
			res, err := testkernel.Run(n, srv, xfer.Options{CC: name, For: runFor})
			busy1 := cpuBusy(t)
			for prog, rt := range bpfRunTime(t) {
				ns, calls := rt.ns-rt0[prog].ns, rt.calls-rt0[prog].calls
				progNs[name] += ns
				progCalls[name] += calls
				if isCongAvoid(prog) {
					avoidNs[name] += ns
					avoidCalls[name] += calls
				}
			}
			busyTotal[name] += busy1 - busy0
			if err != nil || !res.Intact {
				t.Fatalf("%s: %v %+v", name, err, res)
			}
			gb := float64(res.Delivered) / 1e9
			gbps[name] = append(gbps[name], gb*8/res.Duration.Seconds())
			cpuPerGB[name] = append(cpuPerGB[name], (busy1-busy0)/gb)
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n%d rounds x %v, 2 subflows over unshaped veth, medians:\n", rounds, runFor)
	fmt.Fprintf(&b, "%-18s %10s %8s %14s %8s %12s %14s %10s\n", "cc", "Gbit/s", "vs reno", "CPU s per GB", "vs reno", "BPF ns/call", "cong_avoid ns", "BPF % CPU")
	reno, renoCPU := median(gbps["reno"]), median(cpuPerGB["reno"])
	for _, name := range ccs {
		g, c := median(gbps[name]), median(cpuPerGB[name])
		perCall, avoid, share := "-", "-", "-"
		if progCalls[name] > 0 {
			perCall = fmt.Sprintf("%.0f", progNs[name]/progCalls[name])
			share = fmt.Sprintf("%.2f%%", 100*progNs[name]/1e9/busyTotal[name])
		}
		if avoidCalls[name] > 0 {
			avoid = fmt.Sprintf("%.0f", avoidNs[name]/avoidCalls[name])
		}
		fmt.Fprintf(&b, "%-18s %10.2f %7.0f%% %14.3f %7.0f%% %12s %14s %10s\n", label[name], g, 100*g/reno, c, 100*c/renoCPU, perCall, avoid, share)
		if name != "reno" && name != viaBPF.Name && !paced[name] && avoidCalls[name] > 0 && avoidNs[name]/avoidCalls[name] >= 150 {
			t.Errorf("%s: cong_avoid costs %.0f ns per call, goal < 150 ns", label[name], avoidNs[name]/avoidCalls[name])
		}
		if name == viaBPF.Name {
			if g < 0.98*reno {
				t.Errorf("%s reached %.1f%% of built-in Reno's goodput, goal >= 98%%", label[name], 100*g/reno)
			}
			continue
		}
		if name != "reno" && !paced[name] && g < 0.95*reno {
			t.Errorf("%s reached %.0f%% of built-in Reno's goodput, goal >= 95%%", label[name], 100*g/reno)
		}
	}
	t.Log(b.String())
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
		if err == nil && (strings.HasPrefix(info.Name, "mpcc_") || strings.HasPrefix(info.Name, "bpfreno_")) {
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
	return name == "mpcc_cong_avoid" || strings.HasPrefix(name, "bpfreno_cong_a")
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
