// SPDX-License-Identifier: Apache-2.0

package schedexp_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/lab/blocking"
	"github.com/mptcp-cc/mptcp-cc/lab/schedexp"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

// TestSchedExpInVM runs the experiments selected by MPTCP_CC_SCHED_EXP
// (schedexp.ParseSpec) in the test kernel's VM and writes their results
// (JSON and markdown) to the spec's out directory, by default
// lab-results/sched in the repository. make reproduce-sched runs it.
func TestSchedExpInVM(t *testing.T) {
	v := os.Getenv(schedexp.Env)
	if v == "" {
		t.Skip("the scheduler experiments: set " + schedexp.Env + "=1 (make reproduce-sched)")
	}
	testenv.RequireRoot(t)
	spec, err := schedexp.ParseSpec(v)
	if err != nil {
		t.Fatal(err)
	}
	out := outDir(spec)
	if out, err = filepath.Abs(out); err != nil {
		t.Fatal(err)
	}
	guest := v + " out=" + out // the last out= wins
	vmtest.RunTestsWith(t, "^TestGuestExp", spec.Timeout, vmtest.TestOptions{
		Env:      []string{schedexp.Env + "=" + guest},
		Writable: []string{out},
	})
	files, err := schedexp.Render(out)
	if err != nil {
		t.Errorf("rendering the results: %v", err)
	}
	t.Logf("wrote %v in %s", files, out)
	for _, e := range spec.Run {
		md, err := os.ReadFile(filepath.Join(out, e+".md"))
		if err != nil {
			t.Errorf("%s: no result: %v", e, err)
			continue
		}
		t.Logf("%s (%s):\n%s", e, filepath.Join(out, e+".json"), md)
	}
}

// outDir is where the results go: the spec's out=, else lab-results/sched
// in the repository.
func outDir(spec schedexp.Spec) string {
	if spec.Out != "" {
		return spec.Out
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "lab-results", "sched")
}

// guestSpec skips unless this runs in the VM with experiment e selected.
func guestSpec(t *testing.T, e string) schedexp.Spec {
	t.Helper()
	vmtest.Guest(t)
	v := os.Getenv(schedexp.Env)
	if v == "" {
		t.Skip(schedexp.Env + " is not set")
	}
	spec, err := schedexp.ParseSpec(v)
	if err != nil {
		t.Fatal(err)
	}
	if !spec.Runs(e) {
		t.Skipf("%s not selected", e)
	}
	if spec.Out == "" {
		t.Fatal("no out directory: TestSchedExpInVM passes one")
	}
	return spec
}

// schedulers are the experiment's schedulers, loaded once under unique
// names ("default" is the kernel's own and needs no loading).
type schedulers struct {
	root  string
	names map[string]string // algorithm -> the name it is registered as
}

func loadSchedulers(t *testing.T, list []string) *schedulers {
	t.Helper()
	s := &schedulers{root: testkernel.PinRoot(t), names: map[string]string{"default": "default"}}
	for _, algo := range list {
		if algo == "default" {
			continue
		}
		a, err := sched.Lookup(algo)
		if err != nil {
			t.Fatal(err)
		}
		name := testenv.Unique("x_" + algo[:min(len(algo), 6)] + "_")
		if err := sched.Load(a, sched.Options{Name: name, PinRoot: s.root}); err != nil {
			t.Fatalf("loading %s: %v", algo, err)
		}
		t.Cleanup(func() {
			if err := sched.Unload(name, s.root); err != nil {
				t.Errorf("unloading %s: %v", name, err)
			}
		})
		s.names[algo] = name
	}
	return s
}

// use makes algo the scheduler of the namespace's new connections.
func (s *schedulers) use(t *testing.T, algo, ns string) {
	t.Helper()
	if err := sched.Use(s.names[algo], ns); err != nil {
		t.Fatal(err)
	}
}

// transfer runs one measured transfer from the client's path 0 (or the
// path local names) to the server.
func transfer(t *testing.T, n *topo.Net, local int, o blocking.Options) blocking.Result {
	t.Helper()
	o.ServerNS, o.ClientNS = n.Server, n.Client
	o.Listen = netip.AddrPortFrom(topo.ServerAddr, 0)
	o.Local = topo.ClientAddr(local)
	o.MPTCP = true
	res, err := blocking.Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if o.NoCapture {
		return res
	}
	if res.Unmapped != 0 || res.Capture.Restamped != 0 || res.Capture.Malformed != 0 {
		t.Errorf("incomplete capture: %d unmapped bytes, %+v", res.Unmapped, res.Capture)
	}
	// A record cannot be read before it arrived: if one was, the capture's
	// times or the join are wrong, and so is every blocking time.
	if res.Blocking.N > 0 && res.Blocking.Min < 0 {
		t.Errorf("a record read %.3f ms before it arrived", -res.Blocking.Min)
	}
	return res
}

// DAPS (seed 001): blocking time per case and scheduler, with the model.
func TestGuestExpDAPS(t *testing.T) {
	spec := guestSpec(t, "daps")
	list := spec.SchedulersOr(schedexp.DAPSSchedulers)
	reps := spec.RepsOr(schedexp.DAPSReps)
	s := loadSchedulers(t, list)
	res := schedexp.DAPSResult{Meta: schedexp.Meta{Smoke: spec.Smoke, Kernel: kernel.Release()}, Bytes: spec.Bytes,
		RecordSize: blocking.DefaultRecordSize, Queue: spec.Queue, Pace: spec.Pace}
	for _, n := range spec.Cases {
		c := schedexp.DAPSCases[n-1]
		cr, err := schedexp.NewCaseResult(n, spec.Queue)
		if err != nil {
			t.Fatal(err)
		}
		for rep := 1; rep <= reps; rep++ {
			for _, algo := range list {
				t.Run(fmt.Sprintf("case%d/%s/%d", n, algo, rep), func(t *testing.T) {
					net := testkernel.Net(t, topo.Config{
						Paths:       []int{0, 1},
						Bottlenecks: cr.Bottlenecks(),
						Subflows:    true,
					})
					s.use(t, algo, net.Client)
					r := transfer(t, net, 0, blocking.Options{
						Send: blocking.SendOptions{Bytes: spec.Bytes, RateBits: spec.Pace * (c.C0 + c.C1)},
					})
					if r.Subflows != 2 {
						t.Fatalf("%d subflows, want one per path", r.Subflows)
					}
					t.Logf("case %d %s rep %d: blocking %+v (model %v); delay mean %.0f ms; %.2f Mbit/s",
						n, algo, rep, r.Blocking, c.Model(), r.Delay.Mean, r.Goodput/1e6)
					cr.Runs = append(cr.Runs, schedexp.NewRun(algo, rep, r, true))
				})
			}
		}
		cr.Schedulers = schedexp.Pool(cr.Runs, list)
		res.Cases = append(res.Cases, cr)
	}
	if err := schedexp.Write(spec.Out, "daps", res, res.Markdown()); err != nil {
		t.Fatal(err)
	}
}

// PAPD (seed 004, second table): Uc = T_mp / T_best with a receive window
// of the seed's size relative to the best path.
func TestGuestExpPAPD(t *testing.T) {
	spec := guestSpec(t, "papd")
	list := spec.SchedulersOr(schedexp.PAPDSchedulers)
	reps := spec.RepsOr(schedexp.PAPDReps)
	s := loadSchedulers(t, list)
	ratio := schedexp.SeedBufferRatio()
	target := int(ratio * spec.RateBits / 8 * schedexp.PAPDRTT1.Seconds())
	res := schedexp.PAPDResult{Meta: schedexp.Meta{Smoke: spec.Smoke, Kernel: kernel.Release()}, RateBits: spec.RateBits,
		RTT1Ms: ms(schedexp.PAPDRTT1), BufRatio: ratio, Seconds: spec.Duration.Seconds(), WarmupSec: spec.Warmup.Seconds()}

	queue := func(rtt time.Duration) uint32 { return uint32(spec.RateBits / 8 * rtt.Seconds()) }
	network := func(t *testing.T, rtt2 time.Duration, loss2 float64, seed uint64, multipath bool, rmem int) *topo.Net {
		n := testkernel.Net(t, topo.Config{
			Paths: []int{0, 1},
			Bottlenecks: []topo.Shaping{
				{RateBits: uint64(spec.RateBits), Delay: schedexp.PAPDRTT1 / 2, QueueBytes: queue(schedexp.PAPDRTT1)},
				{RateBits: uint64(spec.RateBits), Delay: rtt2 / 2, QueueBytes: queue(rtt2), Loss: loss2, Seed: seed},
			},
			Subflows: multipath,
		})
		setRmem(t, n.Server, rmem)
		return n
	}
	run := func(t *testing.T, n *topo.Net, path int, d time.Duration) blocking.Result {
		return transfer(t, n, path, blocking.Options{Send: blocking.SendOptions{For: d}, Warmup: min(spec.Warmup, d/2)})
	}

	// The kernel advertises a fraction of its receive buffer: one run on
	// path 1 alone (long enough for the window to open fully) shows which,
	// and the buffer is scaled to make the window the target
	// (schedexp.Calibration).
	cal := schedexp.Calibration{TargetWindow: target, ProbeRmem: target}
	t.Run("calibration", func(t *testing.T) {
		r := run(t, network(t, spec.RTT2[0], 0, 1, false, target), 0, min(spec.Duration, 6*time.Second))
		cal.ProbeWindow = r.MaxWindow
	})
	if cal.ProbeWindow == 0 {
		t.Fatal("the calibration run saw no window advertised")
	}
	cal.Rmem = cal.RmemFor()
	res.Calibration = cal
	t.Logf("receive window target %d bytes (%.2f x RTT1 x rate): tcp_rmem %d gave %d, so tcp_rmem %d",
		target, ratio, cal.ProbeRmem, cal.ProbeWindow, cal.Rmem)
	// The window each run then sees should be the target; further off
	// than this, the runs do not have the seed's buffer.
	checkWindow := func(t *testing.T, w uint64) {
		if f := float64(w) / float64(target); f < 0.85 || f > 1.15 {
			t.Errorf("largest window advertised %d bytes, %.2f x the target %d", w, f, target)
		}
	}

	for _, rtt2 := range spec.RTT2 {
		for _, loss2 := range spec.Loss2 {
			cr := schedexp.PAPDConfigResult{RTT2Ms: ms(rtt2), Loss2: loss2}
			for rep := 1; rep <= reps; rep++ {
				seed := uint64(rep)
				for path := 0; path < 2; path++ {
					t.Run(fmt.Sprintf("rtt%v/loss%g/path%d/%d", rtt2, loss2, path, rep), func(t *testing.T) {
						r := run(t, network(t, rtt2, loss2, seed, false, cal.Rmem), path, spec.Duration)
						if r.Subflows != 1 {
							t.Fatalf("%d subflows on one path", r.Subflows)
						}
						checkWindow(t, r.MaxWindow)
						t.Logf("path %d alone: %.2f Mbit/s, window %d", path, r.Goodput/1e6, r.MaxWindow)
						cr.Alone[path] = append(cr.Alone[path], schedexp.NewRun("path", rep, r, false))
					})
				}
				for _, algo := range list {
					t.Run(fmt.Sprintf("rtt%v/loss%g/%s/%d", rtt2, loss2, algo, rep), func(t *testing.T) {
						n := network(t, rtt2, loss2, seed, true, cal.Rmem)
						s.use(t, algo, n.Client)
						r := run(t, n, 0, spec.Duration)
						if r.Subflows != 2 {
							t.Fatalf("%d subflows, want one per path", r.Subflows)
						}
						checkWindow(t, r.MaxWindow)
						t.Logf("%s: %.2f Mbit/s, window %d", algo, r.Goodput/1e6, r.MaxWindow)
						cr.Runs = append(cr.Runs, schedexp.NewRun(algo, rep, r, false))
					})
				}
			}
			cr.Finish(list)
			res.Configs = append(res.Configs, cr)
		}
	}
	if err := schedexp.Write(spec.Out, "papd", res, res.Markdown()); err != nil {
		t.Fatal(err)
	}
}

// The cost of a decision: every BPF scheduler's get_send and get_retrans
// time per call from the kernel's accounting, during a bulk transfer,
// next to the goodput of that transfer and of the kernel's default.
func TestGuestExpCost(t *testing.T) {
	spec := guestSpec(t, "cost")
	list := spec.SchedulersOr(append([]string{"default"}, sched.Names()...))
	reps := spec.RepsOr(schedexp.CostReps)
	s := loadSchedulers(t, list)
	stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		t.Fatalf("enabling BPF run-time statistics: %v", err)
	}
	defer stats.Close()
	res := schedexp.CostResult{Meta: schedexp.Meta{Smoke: spec.Smoke, Kernel: kernel.Release()}, Seconds: spec.CostDuration.Seconds()}
	for rep := 1; rep <= reps; rep++ {
		for _, algo := range list {
			t.Run(fmt.Sprintf("%s/%d", algo, rep), func(t *testing.T) {
				n := testkernel.Net(t, topo.Config{
					Paths: []int{0, 1},
					Bottlenecks: []topo.Shaping{
						{RateBits: uint64(schedexp.CostPaths[0].RateBits), Delay: schedexp.CostPaths[0].RTT / 2},
						{RateBits: uint64(schedexp.CostPaths[1].RateBits), Delay: schedexp.CostPaths[1].RTT / 2},
					},
					Subflows: true,
				})
				s.use(t, algo, n.Client)
				before := runStats(t, s, algo)
				r := transfer(t, n, 0, blocking.Options{
					Send: blocking.SendOptions{For: spec.CostDuration}, NoCapture: true, Warmup: spec.CostDuration / 5,
				})
				after := runStats(t, s, algo)
				run := schedexp.CostRun{Run: schedexp.NewRun(algo, rep, r, false)}
				send, retr := after["sched_get_send"], after["sched_get_retrans"]
				run.SendCalls = send.Runs - before["sched_get_send"].Runs
				run.SendNs = uint64(send.Runtime - before["sched_get_send"].Runtime)
				run.RetransCalls = retr.Runs - before["sched_get_retrans"].Runs
				run.RetransNs = uint64(retr.Runtime - before["sched_get_retrans"].Runtime)
				if algo != "default" && run.SendCalls == 0 {
					t.Fatalf("%s: the kernel counted no get_send call during a %v transfer", algo, spec.CostDuration)
				}
				t.Logf("%s: %.2f Mbit/s; get_send %d calls, %d ns; get_retrans %d calls, %d ns",
					algo, r.Goodput/1e6, run.SendCalls, run.SendNs, run.RetransCalls, run.RetransNs)
				res.Runs = append(res.Runs, run)
			})
		}
	}
	res.Cells = schedexp.PoolCost(res.Runs, list)
	if err := schedexp.Write(spec.Out, "cost", res, res.Markdown()); err != nil {
		t.Fatal(err)
	}
}

// setRmem fixes the receive buffer of the namespace's TCP and MPTCP
// sockets at bytes: net.ipv4.tcp_rmem (per namespace) with min = default
// = max, so autotuning cannot move it.
func setRmem(t *testing.T, ns string, bytes int) {
	t.Helper()
	v := fmt.Sprintf("%d %d %d", bytes, bytes, bytes)
	if err := netns.Do(ns, func() error { return os.WriteFile("/proc/sys/net/ipv4/tcp_rmem", []byte(v), 0o644) }); err != nil {
		t.Fatalf("setting net.ipv4.tcp_rmem in %s: %v", ns, err)
	}
}

func runStats(t *testing.T, s *schedulers, algo string) map[string]sched.ProgramRun {
	t.Helper()
	if algo == "default" {
		return map[string]sched.ProgramRun{}
	}
	st, err := sched.RunStats(s.root, s.names[algo])
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
