// SPDX-License-Identifier: Apache-2.0

// Package ssthresh runs the arms that tell where the ssthresh anomaly
// (docs/kernel-faults.md, section 2) comes from: the same lossy load on
// every arm (a congestion control on MPTCP subflows, or on plain TCP),
// each watched by the read-only lab/cawatch, and the rate of implausible
// windows per window reduction, with its 95% interval, per arm.
//
// The arms that decide it: our coupled CCs (BPF, with coupling and maps),
// the kernel's Reno through BPF struct_ops (lab/bpfreno: BPF, no algorithm
// of ours), the kernel's reno and cubic on the same MPTCP subflows (no
// BPF), and cubic on plain TCP (no MPTCP). Every arm runs at the same time
// as the others, each on a network of its own, so they share the machine's
// load alike.
package ssthresh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/lab/cawatch"
	"github.com/mptcp-cc/mptcp-cc/lab/integrity"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// Arm is one configuration under test.
type Arm struct {
	Name string `json:"name"` // as given, e.g. "cubic+tcp"
	CC   string `json:"cc"`   // the congestion control the sockets ask for (registered name)
	TCP  bool   `json:"tcp"`  // plain TCP instead of MPTCP
}

// ParseArm reads "CC" or "CC+tcp". The CC is checked when the arm runs.
func ParseArm(s string) (Arm, error) {
	cc, opt, _ := strings.Cut(s, "+")
	switch {
	case cc == "":
		return Arm{}, fmt.Errorf("arm %q: want CC or CC+tcp (e.g. cubic, cubic+tcp)", s)
	case opt != "" && opt != "tcp":
		return Arm{}, fmt.Errorf("arm %q: unknown option %q: want CC or CC+tcp", s, opt)
	}
	return Arm{Name: s, CC: cc, TCP: opt == "tcp"}, nil
}

// The load of every arm: the soak's lossy setup. Two paths of 20 Mbit/s,
// 10 ms each way, a 34-packet queue and 3% random loss; eight flows, four
// on each path: four MPTCP connections of two subflows, or eight TCP
// connections.
var shaping = topo.Shaping{RateBits: 20e6, Delay: 10 * time.Millisecond, QueueBytes: 34 * 1500, Loss: 0.03}

const connsMPTCP, connsTCP = 4, 8

// Options of a run.
type Options struct {
	Prefix   string // namespace name prefix (a random suffix is added)
	Arms     []Arm
	For      time.Duration // how long every arm runs
	Limit    uint32        // the largest plausible window (0: cawatch.DefaultLimit)
	Progress io.Writer     // a line a minute; nil: quiet
}

// ArmResult is what one arm measured.
type ArmResult struct {
	Arm
	Counts    cawatch.Counts     `json:"counts"`
	Sightings []cawatch.Sighting `json:"sightings,omitempty"`
	Episodes  int                `json:"episodes"` // reductions that got an implausible ssthresh from a plausible window
	Sockets   int                `json:"sockets"`  // sockets with one
	Sent      int64              `json:"sent"`     // bytes the senders wrote
	NoUndo    string             `json:"no_undo,omitempty"`
	// The client namespace's TcpExt counters that moved during the arm:
	// TCPSackRecovery + TCPRenoRecovery count the recoveries the kernel
	// entered, to hold against the Recovery entries the watch saw.
	TcpExt map[string]uint64 `json:"tcpext"`
	Errors []string          `json:"errors,omitempty"`
}

// Rate is episodes per 10,000 window reductions, with the 95% Wilson
// interval.
func (r ArmResult) Rate() (rate, lo, hi float64) {
	p, lo, hi := integrity.Wilson(r.Episodes, int(r.Counts.Reductions()))
	return 1e4 * p, 1e4 * lo, 1e4 * hi
}

// Report is a whole run.
type Report struct {
	Kernel string        `json:"kernel"`
	For    time.Duration `json:"for"`
	Limit  uint32        `json:"limit"`
	Arms   []ArmResult   `json:"arms"`
}

// Run runs every arm at once for o.For. The arms' congestion controls must
// be registered already.
func Run(ctx context.Context, o Options) (Report, error) {
	if len(o.Arms) == 0 || o.For <= 0 {
		return Report{}, errors.New("ssthresh: want arms and a duration")
	}
	if o.Limit == 0 {
		o.Limit = cawatch.DefaultLimit
	}
	have, err := kernel.CongestionControlSet()
	if err != nil {
		return Report{}, err
	}
	for _, a := range o.Arms {
		if !have[a.CC] {
			return Report{}, fmt.Errorf("arm %s: congestion control %q is not registered: load ours with mptcp-cc load, or pick a built-in one", a.Name, a.CC)
		}
	}
	rep := Report{Kernel: kernel.Release(), For: o.For, Limit: o.Limit, Arms: make([]ArmResult, len(o.Arms))}
	errs := make([]error, len(o.Arms))
	var wg sync.WaitGroup
	for i, a := range o.Arms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Arms[i], errs[i] = runArm(ctx, a, o)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("arm %s: %w", a.Name, errs[i])
			}
		}()
	}
	if o.Progress != nil {
		go func() {
			for start := time.Now(); ; {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Minute):
				}
				if time.Since(start) >= o.For {
					return
				}
				fmt.Fprintf(o.Progress, "  %s of %s\n", time.Since(start).Round(time.Second), o.For)
			}
		}()
	}
	wg.Wait()
	return rep, errors.Join(append(errs, ctx.Err())...)
}

func runArm(ctx context.Context, a Arm, o Options) (ArmResult, error) {
	r := ArmResult{Arm: a}
	n, err := topo.Build(topo.Config{
		Prefix:      o.Prefix,
		Paths:       []int{0, 1},
		Bottlenecks: []topo.Shaping{seeded(shaping, 1), seeded(shaping, 2)},
		Subflows:    !a.TCP,
	})
	if err != nil {
		return r, err
	}
	defer n.Close()
	srv, err := xfer.ListenWith(n.Server, netip.AddrPortFrom(topo.ServerAddr, 0), !a.TCP, xfer.ServerOptions{NoVerify: true})
	if err != nil {
		return r, err
	}
	defer srv.Close()
	mib0, err := kernel.TCPExtMIB(n.Client)
	if err != nil {
		return r, err
	}
	w, err := cawatch.Start(cawatch.Options{Namespace: n.Client, Limit: o.Limit})
	if err != nil {
		return r, err
	}
	if w.NoUndo != nil {
		r.NoUndo = w.NoUndo.Error()
	}

	var clients []*xfer.Client
	conns := connsMPTCP
	if a.TCP {
		conns = connsTCP
	}
	for i := range conns {
		path := 0
		if a.TCP {
			path = i % 2 // MPTCP: the join puts a subflow on path 1
		}
		c, err := xfer.Start(xfer.Options{NS: n.Client, Local: topo.ClientAddr(path), Remote: srv.Addr(),
			MPTCP: !a.TCP, CC: a.CC, For: o.For})
		if err != nil {
			r.Errors = append(r.Errors, err.Error())
			continue
		}
		clients = append(clients, c)
	}
	// An interrupted run ends its transfers now, not at o.For: closing
	// the server aborts them (after xfer's grace of a few seconds).
	finished := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			srv.Close()
		case <-finished:
		}
	}()
	for _, c := range clients {
		res, err := c.Wait()
		r.Sent += res.Sent
		switch {
		case len(r.Errors) >= 5:
		case err != nil:
			r.Errors = append(r.Errors, err.Error())
		case res.CC != a.CC:
			r.Errors = append(r.Errors, fmt.Sprintf("a socket ran %q, not %q", res.CC, a.CC))
		}
	}
	close(finished)
	// Every socket closed before the counts are read, so that the
	// kernel's count of recoveries and the watch's cover the same ones.
	quiet(n.Client, 10*time.Second)
	counts, sightings, err := w.Stop()
	if mib1, merr := kernel.TCPExtMIB(n.Client); merr == nil {
		r.TcpExt = kernel.MIBDelta(mib0, mib1)
	}
	r.Counts, r.Sightings = counts, sightings
	r.Episodes, r.Sockets = episodes(sightings, o.Limit)
	if err != nil {
		return r, err
	}
	if len(clients) == 0 {
		return r, fmt.Errorf("no connection started: %s", strings.Join(r.Errors, "; "))
	}
	return r, ctx.Err()
}

// quiet waits, up to d, until namespace ns has no TCP socket left open.
func quiet(ns string, d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		socks, err := sockdiag.Dump(ns, unix.AF_INET, sockdiag.Connected)
		if err != nil || len(socks) == 0 {
			return
		}
	}
}

func seeded(s topo.Shaping, seed uint64) topo.Shaping {
	s.Seed = uint64(time.Now().UnixNano()) + seed
	return s
}

// episodes counts the window reductions that got an implausible ssthresh
// from a plausible window, and the sockets that had one. A reduction is
// told by its prior_cwnd and prior_ssthresh, which the kernel sets when it
// starts one; a reduction that starts from an implausible window (the
// socket kept the bad value and halves it) is a consequence, not counted.
func episodes(ss []cawatch.Sighting, limit uint32) (n, sockets int) {
	bySock := map[uint64][]cawatch.Sighting{}
	for _, s := range ss {
		bySock[s.Sock] = append(bySock[s.Sock], s)
	}
	for _, l := range bySock {
		sort.Slice(l, func(i, j int) bool { return l[i].AtNs < l[j].AtNs })
		found := false
		var last *cawatch.Sighting
		for i := range l {
			s := &l[i]
			bad := cawatch.Implausible(s.Ssthresh, limit) && !cawatch.Implausible(s.PriorCwnd, limit)
			same := last != nil && cawatch.Implausible(last.Ssthresh, limit) &&
				last.PriorCwnd == s.PriorCwnd && last.PriorSsthresh == s.PriorSsthresh
			if bad && !same {
				n++
				found = true
			}
			last = s
		}
		if found {
			sockets++
		}
	}
	return n, sockets
}

// WriteText prints the rates per arm, then each arm's first sightings.
func (rep Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "kernel %s; every arm %s at once: two 20 Mbit/s paths, 10 ms each way, 34-packet queue, 3%% loss; 4 MPTCP connections of 2 subflows or 8 TCP connections; implausible above %d packets; recoveries w/k: entries into Recovery the watch saw / the kernel counted (TcpExt); missed: runs of the state, prr and probe hooks the kernel skipped\n\n",
		rep.Kernel, rep.For, rep.Limit)
	fmt.Fprintf(w, "%-12s %9s %10s %15s %9s %9s %8s %27s %8s %14s\n", "arm", "MB sent", "reductions", "recoveries w/k", "prr steps", "episodes", "sockets", "per 10,000 reductions (CI)", "lost", "missed s/p/a")
	for _, a := range rep.Arms {
		rate, lo, hi := a.Rate()
		m := a.Counts.Misses
		fmt.Fprintf(w, "%-12s %9.0f %10d %15s %9d %9d %8d %27s %8d %14s\n", a.Name, float64(a.Sent)/1e6, a.Counts.Reductions(),
			fmt.Sprintf("%d/%d", a.Counts.Entered[3], a.TcpExt["TCPSackRecovery"]+a.TcpExt["TCPRenoRecovery"]), a.Counts.Calls[cawatch.PRR], a.Episodes, a.Sockets, fmt.Sprintf("%.2f (%.2f-%.2f)", rate, lo, hi), a.Counts.Lost,
			fmt.Sprintf("%d/%d/%d", m[cawatch.State], m[cawatch.PRR], m[cawatch.Probe]))
	}
	for _, a := range rep.Arms {
		if len(a.Sightings) == 0 && len(a.Errors) == 0 && a.NoUndo == "" {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", a.Name)
		if a.NoUndo != "" {
			fmt.Fprintf(w, "  the undo hook is not attached: %s\n", a.NoUndo)
		}
		for _, e := range a.Errors {
			fmt.Fprintf(w, "  error: %s\n", e)
		}
		ss := a.Sightings
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].AtNs < ss[j].AtNs })
		for i, s := range ss {
			if i == maxShown {
				fmt.Fprintf(w, "  ... %d more sightings (all in the JSON)\n", len(ss)-maxShown)
				break
			}
			fmt.Fprintf(w, "  %s\n", s.Describe(rep.Limit))
		}
	}
}

const maxShown = 20
