// SPDX-License-Identifier: Apache-2.0

// Package integrity reproduces the kernel fault our transfers found: MPTCP
// connections that deliver the right number of bytes, but wrong ones. It
// runs many short connections per arm (a congestion control, with options:
// DSS checksums, no join, offloads on, pacing, an early close) over two
// unshaped veth paths, checks every byte against a seeded pattern of its
// own (not lab/xfer's: an independent check), and reports the rate per arm
// with its confidence interval and, for each bad connection, where its
// wrong bytes had been sent and which MIB counters of something amiss
// moved. docs/kernel-faults.md is the report written from it.
package integrity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/blocking"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// Arm is one configuration under test.
type Arm struct {
	Name     string `json:"name"`     // as given, e.g. "cubic" or "cubic+csum"
	CC       string `json:"cc"`       // the congestion control the sockets ask for (registered name)
	Checksum bool   `json:"checksum"` // net.mptcp.checksum_enabled=1 at both ends
	NoJoin   bool   `json:"nojoin"`   // no second subflow: the client has no subflow endpoint
	Offload  bool   `json:"offload"`  // TSO/GSO/GRO left on
	// CloseEarly: the client closes its socket as soon as the payload is
	// written (the kernel sends the rest), instead of half-closing and
	// waiting for the server's verdict.
	CloseEarly bool `json:"close_early"`
	// Busy: bulk MPTCP transfers run on another network of their own
	// throughout the arm (load from other namespaces, as when a test suite
	// runs beside it).
	Busy bool `json:"busy"`
	// Pacing: the CC was loaded with pacing on (ours only; the caller
	// loads it, this records it).
	Pacing bool `json:"pacing"`
	// LateRead: the server reads the header, then waits lateRead before
	// it reads the payload, so that no reader holds the connection while
	// the join comes up and its first data arrive (a trigger test).
	LateRead bool `json:"late_read"`
	// Wire: the server's namespace is captured, payloads included, and a
	// bad connection's segments are checked against their DSS mappings
	// (wire.go). It costs CPU, so it may change the rate it measures.
	Wire bool `json:"wire"`
}

// armOptions are what may follow a CC in an arm, each after a '+'.
var armOptions = map[string]func(*Arm){
	"csum":    func(a *Arm) { a.Checksum = true },
	"nojoin":  func(a *Arm) { a.NoJoin = true },
	"offload": func(a *Arm) { a.Offload = true },
	"pacing":  func(a *Arm) { a.Pacing = true },
	"close":   func(a *Arm) { a.CloseEarly = true },
	"busy":    func(a *Arm) { a.Busy = true },
	"wire":    func(a *Arm) { a.Wire = true },
	"late":    func(a *Arm) { a.LateRead = true },
}

// ParseArm reads "CC[+OPTION]...", options csum, nojoin, offload, pacing, close, busy, wire, late.
// The CC is checked when the arm runs.
func ParseArm(s string) (Arm, error) {
	parts := strings.Split(s, "+")
	a := Arm{Name: s, CC: parts[0]}
	if a.CC == "" {
		return Arm{}, fmt.Errorf("arm %q: want CC[+OPTION]... with options csum, nojoin, offload, pacing, close, busy, wire, late (e.g. cubic, lia+csum)", s)
	}
	for _, o := range parts[1:] {
		set, ok := armOptions[o]
		if !ok {
			return Arm{}, fmt.Errorf("arm %q: unknown option %q: want CC[+OPTION]... with options csum, nojoin, offload, pacing, close, busy, wire, late", s, o)
		}
		set(&a)
	}
	return a, nil
}

// Options of a run.
type Options struct {
	Prefix   string // namespace name prefix (a random suffix is added)
	Arms     []Arm
	Conns    int       // connections per arm
	Size     int       // payload bytes per connection
	Parallel int       // connections at once (default 1)
	Progress io.Writer // a line per arm and every 1,000 connections; nil: quiet
}

// ArmResult is what one arm measured.
type ArmResult struct {
	Arm
	Conns  int    `json:"conns"`  // connections that delivered every byte's count
	Wrong  int    `json:"wrong"`  // of them, with wrong bytes
	Failed int    `json:"failed"` // connections that broke or delivered the wrong count
	Joins  uint64 `json:"joins"`  // MP_JOINs the server completed (MPJoinAckRx)
	// Connections during which a counter of something amiss moved (see
	// kernel.MPTCPAnomalies), and how many of them delivered wrong bytes.
	Flagged      int `json:"flagged"`
	WrongFlagged int `json:"wrong_flagged"`
	// Attributed: connections ran one at a time, so the counters could be
	// tied to them (Flagged and Counters are not measured otherwise).
	Attributed bool              `json:"attributed"`
	MIB        map[string]uint64 `json:"mib"` // the server's MPTCP MIB counters that moved
	Findings   []Finding         `json:"findings,omitempty"`
	// CaptureDrops: packets the +wire capture lost (its buffer was full).
	CaptureDrops uint64 `json:"capture_drops,omitempty"`
	// WireChecked good connections (one in wireSample) were checked on
	// the wire too, and WireRight of them came out right: the capture's
	// check of the instrument itself.
	WireChecked int `json:"wire_checked,omitempty"`
	WireRight   int `json:"wire_right,omitempty"`
	// WireOdd is the first good connection the capture did not find
	// right, kept whole so the report can say why.
	WireOdd *Wire         `json:"wire_odd,omitempty"`
	Errors  []string      `json:"errors,omitempty"` // the first few failures, in words
	Took    time.Duration `json:"took"`
}

// Rate is wrong connections per 10,000, with the 95% Wilson interval.
func (r ArmResult) Rate() (rate, lo, hi float64) {
	p, lo, hi := Wilson(r.Wrong, r.Conns)
	return 1e4 * p, 1e4 * lo, 1e4 * hi
}

// Report is a whole run.
type Report struct {
	Kernel   string      `json:"kernel"`
	Size     int         `json:"size"`
	Parallel int         `json:"parallel"`
	Arms     []ArmResult `json:"arms"`
}

// maxErrors is how many failures an arm keeps in words.
const maxErrors = 5

// Run runs every arm in turn, each on a network of its own that it
// removes after. The arms' congestion controls must be registered already.
func Run(ctx context.Context, o Options) (Report, error) {
	if o.Conns <= 0 || o.Size < window || len(o.Arms) == 0 {
		return Report{}, fmt.Errorf("integrity: want arms, connections > 0 and a size of at least %d bytes", window)
	}
	if err := checkCCs(o.Arms); err != nil {
		return Report{}, err
	}
	rep := Report{Kernel: kernel.Release(), Size: o.Size, Parallel: max(1, o.Parallel)}
	for _, a := range o.Arms {
		r, err := runArm(ctx, a, o)
		rep.Arms = append(rep.Arms, r)
		if err != nil {
			return rep, fmt.Errorf("arm %s: %w", a.Name, err)
		}
	}
	return rep, nil
}

// build is an arm's network, its own: two unshaped paths, a subflow
// endpoint on the second unless the arm has no join, DSS checksums as the
// arm says.
func build(a Arm, prefix string) (*topo.Net, error) {
	n, err := topo.Build(topo.Config{
		Prefix:      prefix,
		Paths:       []int{0, 1},
		Bottlenecks: []topo.Shaping{{}, {}},
		Subflows:    !a.NoJoin,
		NoOffload:   !a.Offload,
	})
	if err != nil {
		return nil, err
	}
	if a.Checksum {
		for _, ns := range []string{n.Client, n.Server} {
			if err := kernel.SetSysctl(ns, "net.mptcp.checksum_enabled", "1"); err != nil {
				n.Close()
				return nil, err
			}
		}
	}
	return n, nil
}

// checkCCs names the first arm whose congestion control the kernel lacks.
func checkCCs(arms []Arm) error {
	have, err := kernel.CongestionControls()
	if err != nil {
		return err
	}
	for _, a := range arms {
		if !slices.Contains(have, a.CC) {
			return fmt.Errorf("arm %s: congestion control %q is not registered (have %s): load ours with mptcp-cc load, or pick a built-in one", a.Name, a.CC, strings.Join(have, " "))
		}
	}
	return nil
}

// outcome is one connection, as both ends saw it.
type outcome struct {
	i, seed uint64
	local   netip.AddrPort // the client's end of the initial subflow
	dialed  bool
	res     result
	err     error // the client's
}

func runArm(ctx context.Context, a Arm, o Options) (ArmResult, error) {
	r := ArmResult{Arm: a}
	n, err := build(a, o.Prefix)
	if err != nil {
		return r, err
	}
	defer n.Close()
	if a.Busy {
		stop, err := busy(o.Prefix)
		if err != nil {
			return r, err
		}
		defer stop()
	}
	var wire *wireSink
	var capture *blocking.Capture
	if a.Wire {
		wire = newWireSink()
		if capture, err = blocking.StartCaptureSnap(n.Server, wireSnap, wire); err != nil {
			return r, err
		}
		defer func() {
			st, _ := capture.Stop()
			r.CaptureDrops = st.Drops
		}()
	}
	mib0, err := kernel.MPTCPMIB(n.Server)
	if err != nil {
		return r, err
	}
	ln, err := xfer.ListenIn(n.Server, netip.AddrPortFrom(topo.ServerAddr, 0), true, nil)
	if err != nil {
		return r, err
	}
	defer ln.Close()
	verdicts := &verdicts{m: map[uint64]chan result{}}
	var wait time.Duration
	if a.LateRead {
		wait = lateRead
	}
	go serve(ln, o.Size, wait, verdicts.deliver)
	remote := ln.Addr().(*net.TCPAddr).AddrPort()
	base := uint64(time.Now().UnixNano())
	one := func(i uint64) outcome {
		seed := base + i
		ch := verdicts.expect(seed)
		defer verdicts.forget(seed)
		out := outcome{i: i, seed: seed}
		out.local, out.dialed, out.err = send(n.Client, remote, a.CC, seed, Pattern(seed, o.Size), a.CloseEarly)
		if out.dialed {
			select {
			case out.res = <-ch:
			case <-time.After(connTimeout + 5*time.Second):
				out.res.err = errors.New("the server never reported on it")
			}
		}
		return out
	}

	// One at a time, the MIB counters that moved belong to the connection
	// that just ended; with several at once they belong to none.
	var w *watch
	if o.Parallel <= 1 {
		if w, err = newWatch(n); err != nil {
			return r, err
		}
	}
	r.Attributed = w != nil
	outcomes, ack, stop := dispatch(ctx, o.Conns, o.Parallel, w != nil, one)
	defer stop()

	start := time.Now()
	done := 0
	for out := range outcomes {
		var odd map[string]uint64
		if w != nil {
			if odd, err = w.next(); err != nil {
				return r, err
			}
			if len(odd) > 0 {
				r.Flagged++
			}
			ack <- struct{}{}
		}
		if wire != nil {
			switch f := out.res.finding; {
			case f != nil:
				f.Wire = inspect(wire, capture, out, o.Size)
			case out.i%wireSample == 0 && out.dialed && out.err == nil && out.res.err == nil:
				r.WireChecked++
				switch w := inspect(wire, capture, out, o.Size); {
				case w.Right():
					r.WireRight++
				case r.WireOdd == nil:
					r.WireOdd = w
				}
			}
		}
		r.take(out, odd, o)
		done++
		if o.Progress != nil && done%1000 == 0 {
			fmt.Fprintf(o.Progress, "  %s: %d connections, %d with wrong bytes, %d failed\n", a.Name, done, r.Wrong, r.Failed)
		}
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	r.Took = time.Since(start)
	mib1, err := kernel.MPTCPMIB(n.Server)
	if err != nil {
		return r, err
	}
	r.MIB = kernel.MIBDelta(mib0, mib1)
	r.Joins = r.MIB["MPJoinAckRx"]
	return r, nil
}

// dispatch runs one(i) for i from 0 to conns-1 on parallel workers (at
// least one) and sends each outcome on outcomes, which it closes after the
// last. With paced, a worker waits for a value on ack after each outcome:
// the caller reads the counters that belong to that connection first.
// stop ends the workers early.
func dispatch(ctx context.Context, conns, parallel int, paced bool, one func(uint64) outcome) (outcomes <-chan outcome, ack chan<- struct{}, stop func()) {
	out, acks, quit := make(chan outcome), make(chan struct{}), make(chan struct{})
	jobs := make(chan uint64)
	go func() {
		defer close(jobs)
		for i := uint64(0); i < uint64(conns) && ctx.Err() == nil; i++ {
			select {
			case jobs <- i:
			case <-quit:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range max(1, parallel) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				select {
				case out <- one(i):
				case <-quit:
					return
				}
				if paced {
					select {
					case <-acks: // the counters are read: next
					case <-quit:
						return
					}
				}
			}
		}()
	}
	go func() { wg.Wait(); close(out) }()
	return out, acks, func() { close(quit) }
}

// take counts one connection. A finding's wrong bytes are also looked for
// in the payloads of the connections that ran about when it did.
func (r *ArmResult) take(out outcome, odd map[string]uint64, o Options) {
	i := int(out.i)
	switch {
	case !out.dialed || out.err != nil || out.res.err != nil:
		r.Failed++
		if len(r.Errors) < maxErrors {
			r.Errors = append(r.Errors, fmt.Sprintf("connection %d: %v", i, errors.Join(out.err, out.res.err)))
		}
	default:
		r.Conns++
		f := out.res.finding
		if f == nil {
			return
		}
		f.Conn, f.Counters = i, odd
		if len(odd) > 0 {
			r.WrongFlagged++
		}
		near := max(1, o.Parallel)
		for j := max(0, i-near); j <= min(o.Conns-1, i+near); j++ {
			if j != i {
				f.LookIn(j, Pattern(out.seed-uint64(i)+uint64(j), o.Size))
			}
		}
		r.Wrong++
		r.Findings = append(r.Findings, *f)
	}
}
