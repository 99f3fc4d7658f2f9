// SPDX-License-Identifier: Apache-2.0

package pathctl_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/linkem"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// seedCell is one row of seed 004's tables: path 1's RTT and loss, path 2's.
type seedCell struct {
	rtt1, rtt2   time.Duration
	loss1, loss2 float64
}

// The seed's second table (where aggregation hurts) and, from its first,
// the cells where it works (equal 10 ms paths).
var seedCells = []seedCell{
	{50 * time.Millisecond, 100 * time.Millisecond, 0, 0.001},
	{50 * time.Millisecond, 100 * time.Millisecond, 0, 0.01},
	{50 * time.Millisecond, 150 * time.Millisecond, 0, 0},
	{50 * time.Millisecond, 150 * time.Millisecond, 0, 0.01},
	{50 * time.Millisecond, 200 * time.Millisecond, 0, 0},
	{50 * time.Millisecond, 200 * time.Millisecond, 0, 0.01},
	{10 * time.Millisecond, 10 * time.Millisecond, 0.0001, 0.0001},
	{10 * time.Millisecond, 10 * time.Millisecond, 0.001, 0.01},
}

// TestBenchSeedPAPD is seed 004's experiment on this kernel: aggregation
// efficiency Uc = T_mp / T_best for the kernel's default scheduler alone and
// with the path controller, against the best path alone, side by side in
// one run.
//
// Scaling: the seed's paths carry about 90 Mbit/s; here each path is
// 10 Mbit/s and the server's receive buffer is scaled with it. The seed's
// minRTT numbers (Uc 0.26 at RTT2 = 200 ms, 0.41 at 150 ms) fit a window of
// about 585 KB at 90 Mbit/s (T_mp = buf / RTT_max), so buf/(RTT_max * T')
// is kept by a window of 65 KB at 10 Mbit/s: tcp_rmem's maximum is set to
// twice that (the kernel keeps about half of it for overhead).
//
// PATHCTL_BENCH="reps=N seconds=S" (defaults 2 and 20).
func TestBenchSeedPAPD(t *testing.T) {
	testenv.Bench(t)
	reps, secs, cells := benchEnv(t)
	const rate = 10e6
	d := time.Duration(secs) * time.Second
	var rows []string
	for _, c := range cells {
		var best, def, ctl, nopeek []float64
		for r := 0; r < reps; r++ {
			best = append(best, goodput(t, c, rate, d, "best"))
			def = append(def, goodput(t, c, rate, d, "default"))
			ctl = append(ctl, goodput(t, c, rate, d, "controller"))
			nopeek = append(nopeek, goodput(t, c, rate, d, "controller-nopeek"))
		}
		b := median(best)
		rows = append(rows, fmt.Sprintf("| %v | %.2g | %v | %.2g | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |",
			c.rtt1, c.loss1, c.rtt2, c.loss2, median(def)/1e6*8, median(ctl)/1e6*8, median(nopeek)/1e6*8, b/1e6*8, median(def)/b, median(ctl)/b, median(nopeek)/b))
	}
	t.Logf("\n| RTT1 | p1 | RTT2 | p2 | default Mbit/s | controller Mbit/s | controller, no peeks | best path Mbit/s | Uc default | Uc controller | Uc no peeks |\n|---|---|---|---|---|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}

// goodput runs one transfer of d over the cell's two paths and returns the
// bytes delivered per second: "best" over the better path alone (one
// subflow), "default" over both, "controller" over both with pathctl,
// "controller-nopeek" the same without its peeks (a trial every hold).
func goodput(t *testing.T, c seedCell, rate float64, d time.Duration, how string) float64 {
	t.Helper()
	n := testkernel.Net(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: uint64(rate), Delay: c.rtt1 / 2, Loss: c.loss1, Seed: 1},
			{RateBits: uint64(rate), Delay: c.rtt2 / 2, Loss: c.loss2, Seed: 2},
		},
		Subflows: how != "best",
	})
	if err := netns.Exec(n.Server, "sysctl", "-q", "-w", "net.ipv4.tcp_rmem=4096 65536 131072"); err != nil {
		t.Fatal(err)
	}
	_, cl := testkernel.Transfer(t, n, xfer.Options{For: d})
	if how == "controller" || how == "controller-nopeek" {
		var cfg pathctl.Config
		if how == "controller-nopeek" {
			cfg.Peek = pathctl.NoPeeks
		}
		token := testkernel.Token(t, n.Client, cl.Local())
		defer runController(t, pathctl.Options{NS: n.Client, Token: token, Apply: pathctl.PerEndpoint, Config: cfg})()
	}
	res, err := cl.Wait()
	if err != nil {
		t.Fatal(err)
	}
	testkernel.Receipt(t, how, res, 0)
	g := float64(res.Delivered) / res.Duration.Seconds()
	t.Logf("%+v %s: %.2f Mbit/s", c, how, g*8/1e6)
	return g
}

// benchEnv reads PATHCTL_BENCH="reps=N seconds=S rtt2=MS" (defaults 2,
// 20 and every cell; rtt2 keeps the seed cells whose second path has that
// RTT, for a closer look at one row).
func benchEnv(t *testing.T) (reps, secs int, cells []seedCell) {
	reps, secs, cells = 2, 20, seedCells
	for _, f := range strings.Fields(os.Getenv("PATHCTL_BENCH")) {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("PATHCTL_BENCH: %q: want key=positive integer", f)
		}
		switch k {
		case "reps":
			reps = n
		case "seconds":
			secs = n
		case "rtt2":
			cells = nil
			for _, c := range seedCells {
				if c.rtt2 == time.Duration(n)*time.Millisecond {
					cells = append(cells, c)
				}
			}
			if len(cells) == 0 {
				t.Fatalf("PATHCTL_BENCH: no seed cell has rtt2=%d ms", n)
			}
		default:
			t.Fatalf("PATHCTL_BENCH: unknown key %q (reps, seconds, rtt2)", k)
		}
	}
	return reps, secs, cells
}

// runController runs pathctl with o in the background; the returned stop
// ends it and reports its error.
func runController(t *testing.T, o pathctl.Options) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	if o.Event == nil {
		o.Event = logEvents(t)
	}
	go func() { done <- pathctl.Run(ctx, o) }()
	return func() {
		cancel()
		if err := <-done; err != nil && err != context.Canceled {
			t.Errorf("controller: %v", err)
		}
	}
}

// logEvents logs each of the controller's decisions, timed from now.
func logEvents(t *testing.T) func(pathctl.Event) {
	start := time.Now()
	return func(e pathctl.Event) {
		t.Logf("  %5.1fs %v%s: %s (err %v)", e.At.Sub(start).Seconds(), e.Decision.Mode, map[bool]string{true: " trial"}[e.Decision.Trial], e.Decision.Reason, e.Err)
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestBenchStall reproduces the stall of docs/algorithms.md (a subflow
// whose window OLIA cut to a few packets held 970 KB of unsent data while
// its sibling sat idle) and measures it without the controller and with
// each of its two answers to a stall (a backup flag on the stuck subflow;
// closing and reopening it), side by side in one run: the same OLIA
// connection over the same two lossy paths (OLIA's own testbed test,
// TestOLIAMovesWindowToBestPath: 20 Mbit/s each, 0.2% loss, 160 ms and
// 40 ms RTT). The controller runs
// per connection (userspace path manager): the stuck subflow is as often
// the initial one, which per endpoint cannot be flagged.
//
// Held time is measured apart from the controller's own stall rule, as
// the symptom: sampled every 100 ms, the time during which one subflow had
// at least 64 KiB not yet sent while another had nothing unsent and
// nothing in flight (idle), so the connection waited on one queue.
//
// PATHCTL_BENCH="reps=N seconds=S" (defaults 2 and 20).
func TestBenchStall(t *testing.T) {
	testenv.Bench(t)
	reps, secs, _ := benchEnv(t)
	d := time.Duration(secs) * time.Second
	root := testkernel.PinRoot(t)
	name := testkernel.Load(t, root, "olia", cc.Params{})
	var rows []string
	// The controller's two answers to a stall: flag the stuck subflow
	// backup, or close it and open it again (Config.ResetStalled).
	for _, ctl := range []string{"none", "flags", "reset"} {
		var good, held []string
		var longest time.Duration
		var queued uint32
		stuck := 0
		for r := 0; r < reps; r++ {
			s := stallRun(t, name, ctl, d, uint64(r+1))
			longest, queued = max(longest, s.longest), max(queued, s.maxQueued)
			held = append(held, fmt.Sprintf("%.1f (%.0f%%)", s.held.Seconds(), 100*s.held.Seconds()/s.duration.Seconds()))
			if s.stuck {
				stuck++
				good = append(good, "stuck")
				t.Logf("controller=%v rep %d: the receiver had not got everything 60 s after the sender stopped; held %.1f s (longest %.1f s, up to %d KB queued); %d decisions switched", ctl, r+1, s.held.Seconds(), s.longest.Seconds(), s.maxQueued>>10, s.switches)
				continue
			}
			good = append(good, fmt.Sprintf("%.2f", s.goodput*8/1e6))
			t.Logf("controller=%v rep %d: %.2f Mbit/s over %.1f s; held %.1f s (longest %.1f s, up to %d KB queued); %d decisions switched", ctl, r+1, s.goodput*8/1e6, s.duration.Seconds(), s.held.Seconds(), s.longest.Seconds(), s.maxQueued>>10, s.switches)
		}
		rows = append(rows, fmt.Sprintf("| %s | %d | %s | %s | %.1f | %d | %d |", ctl, reps, strings.Join(good, ", "), strings.Join(held, ", "), longest.Seconds(), queued>>10, stuck))
	}
	t.Logf("\n| controller | runs | goodput per run (Mbit/s) | held per run, s (share of the run) | longest held (s) | most queued while held (KB) | stuck |\n|---|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}

type stallResult struct {
	goodput       float64 // bytes per second
	duration      time.Duration
	held, longest time.Duration
	maxQueued     uint32
	switches      int  // the controller's decisions that switched
	stuck         bool // the receipt did not come 60 s after the sender stopped
}

func stallRun(t *testing.T, ccName string, ctl string, d time.Duration, seed uint64) (res stallResult) {
	t.Helper()
	const rate, oneWay = 20e6, 20 * time.Millisecond
	bdp := uint32(rate / 8 * (2 * oneWay).Seconds())
	n := testkernel.Net(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: rate, Delay: 4 * oneWay, Loss: 0.002, Seed: 2*seed + 1, QueueBytes: 4 * bdp},
			{RateBits: rate, Delay: oneWay, Loss: 0.002, Seed: 2 * seed, QueueBytes: bdp},
		},
	})
	cl, token := userspaceTransfer(t, n, xfer.Options{For: d, CC: ccName})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	if ctl != "none" {
		var mu sync.Mutex
		defer runController(t, pathctl.Options{NS: n.Client, Token: token, Apply: pathctl.PerConnection,
			Config: pathctl.Config{ResetStalled: ctl == "reset"},
			Event: func(e pathctl.Event) {
				if e.Decision.Switched {
					mu.Lock()
					res.switches++
					mu.Unlock()
				}
				t.Logf("  %5.1f s: %v best=%v trial=%v (%s) err=%v", time.Since(start).Seconds(), e.Decision.Mode, e.Decision.Best, e.Decision.Trial, e.Decision.Reason, e.Err)
			}})()
	}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		const every = 100 * time.Millisecond
		var run time.Duration
		for tick := time.NewTicker(every); ; {
			select {
			case <-ctx.Done():
				tick.Stop()
				return
			case <-tick.C:
			}
			socks, err := sockdiag.Dump(n.Client, 2, sockdiag.StateSet(sockdiag.Established))
			if err != nil {
				continue
			}
			var queued uint32
			idle := false
			for _, s := range socks {
				if !s.MPTCP || s.Token != token {
					continue
				}
				if s.Info.Notsent_bytes >= 64<<10 {
					queued = max(queued, s.Info.Notsent_bytes)
				} else if s.Info.Notsent_bytes == 0 && s.Info.Unacked == 0 {
					idle = true
				}
			}
			if queued > 0 && idle {
				run += every
				res.held += every
				res.longest = max(res.longest, run)
				res.maxQueued = max(res.maxQueued, queued)
			} else {
				run = 0
			}
		}
	}()
	out, err := cl.Wait()
	cancel()
	<-sampled
	res.duration = time.Since(start)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		res.stuck = true
		return res
	}
	if err != nil {
		t.Fatal(err)
	}
	testkernel.Receipt(t, "the stalled transfer", out, 0)
	res.goodput = float64(out.Delivered) / out.Duration.Seconds()
	res.duration = out.Duration
	return res
}

// userspaceTransfer starts a transfer from path 0 of n under the userspace
// path manager (pm_type=1, as mptcpd runs it) and opens its second subflow
// from path 1 itself, so that the controller can flag either subflow per
// connection, the initial one included (per endpoint it cannot: its
// address is no endpoint).
func userspaceTransfer(t *testing.T, n *topo.Net, o xfer.Options) (*xfer.Client, uint32) {
	t.Helper()
	if err := netns.Exec(n.Client, "sysctl", "-q", "-w", "net.mptcp.pm_type=1"); err != nil {
		t.Fatal(err)
	}
	srv, cl := testkernel.Transfer(t, n, o)
	token := testkernel.Token(t, n.Client, cl.Local())
	pm, err := mptcpnl.DialNS(n.Client)
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	// The kernel opens subflows only once the connection is fully
	// established (ENOTCONN before): retry for a moment.
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err = pm.CreateSubflow(token, topo.ClientAddr(1), srv.Addr()); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		cl.Wait()
		t.Fatal(err)
	}
	return cl, token
}

// changeTrace is a mahimahi trace (one 1500-byte delivery opportunity per
// line, in ms) of a path at good for phase, then bad for phase, then good
// again for phase.
func changeTrace(t *testing.T, good, bad float64, phase time.Duration) *linkem.Trace {
	t.Helper()
	var b strings.Builder
	at := 0.0
	for i, rate := range []float64{good, bad, good} {
		end := float64((time.Duration(i+1) * phase).Milliseconds())
		step := float64(linkem.TraceMTU*8) / rate * 1000 // ms between opportunities
		for at += step; at <= end; at += step {
			fmt.Fprintf(&b, "%d\n", int64(at))
		}
		at = end
	}
	fmt.Fprintf(&b, "%d\n", int64(at)) // the period ends with the third phase
	tr, err := linkem.ParseTrace(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestBenchPathChange: the better path degrades mid-transfer and
// recovers (its capacity from a mahimahi trace: 10 Mbit/s, then 0.3 Mbit/s,
// then 10 Mbit/s again, 12 s each); the other path is a steady 2 Mbit/s at
// 100 ms RTT. The server's receive buffer is small (as in the seed cells),
// so aggregating the two hurts. The controller runs per connection (the
// userspace path manager: the initial subflow, on the steady path, must be
// flaggable too). Side by side with the default scheduler alone, in one
// run: goodput per phase, and how long after each change the kernel showed
// the controller's flags following it.
func TestBenchPathChange(t *testing.T) {
	testenv.Bench(t)
	reps, _, _ := benchEnv(t)
	const phase = 12 * time.Second
	var rows []string
	arms := []struct {
		name string
		cfg  *pathctl.Config // nil: no controller
	}{{"no", nil}, {"yes", &pathctl.Config{}}, {"yes, no peeks", &pathctl.Config{Peek: pathctl.NoPeeks}}}
	for _, arm := range arms {
		for r := 0; r < reps; r++ {
			res := changeRun(t, arm.cfg, phase)
			follow := "-"
			if arm.cfg != nil {
				follow = fmt.Sprintf("%.1f s / %.1f s", res.follow[0].Seconds(), res.follow[1].Seconds())
			}
			rows = append(rows, fmt.Sprintf("| %s | %d | %.2f | %.2f | %.2f | %s | %v |", arm.name, r+1, res.phase[0]*8/1e6, res.phase[1]*8/1e6, res.phase[2]*8/1e6, follow, res.intact))
		}
	}
	t.Logf("\n| controller | run | goodput, path 1 good (Mbit/s) | path 1 degraded | path 1 recovered | flags followed the degradation / the recovery after | data intact |\n|---|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}

type changeResult struct {
	phase  [3]float64       // bytes acked per second in each phase (its first 2 s left out)
	follow [2]time.Duration // from each change until the kernel's flags matched it (-1: never)
	intact bool
}

func changeRun(t *testing.T, cfg *pathctl.Config, phase time.Duration) changeResult {
	t.Helper()
	n := testkernel.Net(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: 2e6, Delay: 50 * time.Millisecond, QueueBytes: 50000},
			{Trace: changeTrace(t, 10e6, 0.3e6, phase), Delay: 10 * time.Millisecond, QueueBytes: 50000},
		},
	})
	start := time.Now() // the trace starts as the link is configured
	if err := netns.Exec(n.Server, "sysctl", "-q", "-w", "net.ipv4.tcp_rmem=4096 65536 131072"); err != nil {
		t.Fatal(err)
	}
	cl, token := userspaceTransfer(t, n, xfer.Options{For: 3*phase - time.Since(start) - time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if cfg != nil {
		defer runController(t, pathctl.Options{NS: n.Client, Token: token, Apply: pathctl.PerConnection, Config: *cfg})()
	}
	// Sample bytes acked and the kernel's flags every 250 ms.
	type sample struct {
		at           time.Duration
		acked        uint64
		flag0, flag1 bool
	}
	var samples []sample
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			socks, err := sockdiag.Dump(n.Client, 2, sockdiag.StateSet(sockdiag.Established))
			if err != nil {
				continue
			}
			s := sample{at: time.Since(start)}
			for _, k := range socks {
				if !k.MPTCP || k.Token != token {
					continue
				}
				s.acked += k.Info.Bytes_acked
				switch k.Local.Addr().Unmap() {
				case topo.ClientAddr(0):
					s.flag0 = k.BackupLocal
				case topo.ClientAddr(1):
					s.flag1 = k.BackupLocal
				}
			}
			samples = append(samples, s)
		}
	}()
	out, err := cl.Wait()
	cancel()
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	testkernel.Receipt(t, "the path-change transfer", out, 0)
	res := changeResult{intact: out.Intact, follow: [2]time.Duration{-1, -1}}
	// Goodput per phase, from the 2nd second of the phase to its end.
	for p := range 3 {
		from, to := time.Duration(p)*phase+2*time.Second, time.Duration(p+1)*phase
		var first, last *sample
		for i := range samples {
			if s := &samples[i]; s.at >= from && s.at <= to {
				if first == nil {
					first = s
				}
				last = s
			}
		}
		if first != nil && last != first {
			res.phase[p] = float64(last.acked-first.acked) / (last.at - first.at).Seconds()
		}
	}
	// Following: after the degradation, path 1 flagged and path 0 not;
	// after the recovery, path 1 not flagged - from the first sample on
	// which the flags stayed so for a second (a peek clears path 1's
	// flag for a moment; that is no following).
	follows := func(from, to time.Duration, match func(sample) bool) time.Duration {
		for i, s := range samples {
			if s.at < from || s.at >= to || !match(s) {
				continue
			}
			held := true
			for _, later := range samples[i:] {
				if later.at >= min(s.at+time.Second, to) {
					break
				}
				held = held && match(later)
			}
			if held {
				return s.at - from
			}
		}
		return -1
	}
	res.follow[0] = follows(phase, 2*phase, func(s sample) bool { return s.flag1 && !s.flag0 })
	res.follow[1] = follows(2*phase, 3*phase, func(s sample) bool { return !s.flag1 })
	arm := "no controller"
	if cfg != nil {
		arm = fmt.Sprintf("controller (peek %d)", cfg.Peek)
	}
	t.Logf("%s: %.2f / %.2f / %.2f Mbit/s per phase; followed after %v / %v; intact %v",
		arm, res.phase[0]*8/1e6, res.phase[1]*8/1e6, res.phase[2]*8/1e6, res.follow[0], res.follow[1], out.Intact)
	return res
}
