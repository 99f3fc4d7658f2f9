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
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/lab/blocking"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
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
			if err := sysctl(ns, "net/mptcp/checksum_enabled", "1"); err != nil {
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

// result is what the server saw of one connection.
type result struct {
	seed    uint64
	finding *Finding
	err     error
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

// verdicts routes what the server found to the client waiting for it.
type verdicts struct {
	mu sync.Mutex
	m  map[uint64]chan result
}

func (v *verdicts) expect(seed uint64) chan result {
	ch := make(chan result, 1)
	v.mu.Lock()
	v.m[seed] = ch
	v.mu.Unlock()
	return ch
}

func (v *verdicts) forget(seed uint64) {
	v.mu.Lock()
	delete(v.m, seed)
	v.mu.Unlock()
}

// deliver hands r to its client; a verdict nobody waits for (a header that
// did not arrive, a client that gave up) is dropped: the client counts it.
func (v *verdicts) deliver(r result) {
	v.mu.Lock()
	ch := v.m[r.seed]
	v.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// connTimeout bounds one connection: 256 KiB over an unshaped veth takes
// milliseconds, so a connection still open after this has broken.
const connTimeout = 20 * time.Second

// send is the client side of one connection: the seed and length, the
// payload, then it half-closes and waits for the server's one-byte
// verdict; or, closeEarly, it closes at once.
func send(ns string, remote netip.AddrPort, cc string, seed uint64, payload []byte, closeEarly bool) (local netip.AddrPort, dialed bool, err error) {
	c, err := xfer.Dial(ns, topo.ClientAddr(0), remote, true, func(fd int) error {
		return unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
	})
	if err != nil {
		return netip.AddrPort{}, false, err
	}
	defer c.Close()
	local = c.LocalAddr().(*net.TCPAddr).AddrPort()
	return local, true, sendOn(c, seed, payload, closeEarly)
}

// inspect checks a connection's captured segments, once the capture has
// had time to read the last of them.
//
// The capture reads the socket in its own goroutine and can lag behind
// the connection on a loaded machine, so the check is repeated until every
// stream byte is covered or wireSettle has passed: a connection found
// incomplete is one the capture did not see whole, not one it was late on.
func inspect(wire *wireSink, capture *blocking.Capture, out outcome, size int) *Wire {
	client := netip.AddrPortFrom(out.local.Addr().Unmap(), out.local.Port())
	stream := wireStream(out.seed, size)
	deadline := time.Now().Add(wireSettle)
	for {
		time.Sleep(wirePoll)
		w := &Wire{}
		if c, starts, ok := wire.conn(client); ok {
			w = checkWire(c, stream, out.res.finding)
			w.Starts = starts
		}
		w.CaptureDrops = capture.Drops()
		if (w.Segments > 0 && w.Uncovered == 0) || time.Now().After(deadline) {
			return w
		}
	}
}

// wireSettle is how long a connection's check waits at most for the
// capture to read what is still queued for it, wirePoll how often it
// looks, and wireSample how often a good connection is checked too.
const (
	wireSettle = 5 * time.Second
	wirePoll   = 100 * time.Millisecond
	wireSample = 1000
)

func sendOn(c *net.TCPConn, seed uint64, payload []byte, closeEarly bool) error {
	_ = c.SetDeadline(time.Now().Add(connTimeout))
	var hdr [16]byte
	binary.BigEndian.PutUint64(hdr[:8], seed)
	size := uint64(len(payload))
	if closeEarly {
		size |= noVerdict
	}
	binary.BigEndian.PutUint64(hdr[8:], size)
	if _, err := c.Write(hdr[:]); err != nil {
		return fmt.Errorf("sending: %w", err)
	}
	if _, err := c.Write(payload); err != nil {
		return fmt.Errorf("sending: %w", err)
	}
	if closeEarly {
		return nil // the deferred Close, with the payload still in flight
	}
	if err := c.CloseWrite(); err != nil {
		return err
	}
	var verdict [1]byte
	if _, err := io.ReadFull(c, verdict[:]); err != nil {
		return fmt.Errorf("waiting for the server: %w", err)
	}
	return nil
}

// lateRead is how long a +late server waits between the header and the
// payload: the join comes up, and sends its first data, about 1 ms into a
// connection here.
const lateRead = 5 * time.Millisecond

// noVerdict, in the header's length, says the client closes as soon as it
// has written, and waits for no verdict.
const noVerdict = 1 << 63

// serve is the server: each connection read to its end and checked
// against the pattern its header names.
func serve(ln net.Listener, size int, wait time.Duration, deliver func(result)) {
	bufs := sync.Pool{New: func() any { return make([]byte, size+1) }}
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			buf := bufs.Get().([]byte)
			r := receive(c, buf, wait)
			c.Close()
			bufs.Put(buf)
			deliver(r)
		}()
	}
}

func receive(c net.Conn, buf []byte, wait time.Duration) result {
	_ = c.SetDeadline(time.Now().Add(connTimeout))
	var hdr [16]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return result{err: fmt.Errorf("server: reading the header: %w", err)}
	}
	r := result{seed: binary.BigEndian.Uint64(hdr[:8])}
	size := binary.BigEndian.Uint64(hdr[8:])
	answer := size&noVerdict == 0
	size &^= noVerdict
	time.Sleep(wait)
	if size+1 != uint64(len(buf)) {
		r.err = fmt.Errorf("server: the client announced %d bytes, want %d", size, len(buf)-1)
		return r
	}
	n, err := io.ReadFull(c, buf)
	if err != io.ErrUnexpectedEOF && err != nil {
		r.err = fmt.Errorf("server: after %d bytes: %w", n, err)
		return r
	}
	if n != int(size) {
		r.err = fmt.Errorf("server: %d bytes arrived, %d were sent", n, size)
		return r
	}
	r.finding = Check(0, buf[:n], Pattern(r.seed, n))
	if !answer {
		return r
	}
	if _, err := c.Write([]byte{0}); err != nil {
		r.err = fmt.Errorf("server: answering: %w", err)
	}
	return r
}

func sysctl(ns, key, val string) error {
	return netns.Do(ns, func() error {
		return os.WriteFile("/proc/sys/"+key, []byte(val), 0o644)
	})
}

// Wilson is the proportion k/n and its 95% Wilson score interval.
func Wilson(k, n int) (p, lo, hi float64) {
	if n == 0 {
		return 0, 0, 1
	}
	const z = 1.959964
	nf := float64(n)
	p = float64(k) / nf
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return p, max(0, mid-half), min(1, mid+half)
}

// WriteText prints the report as a table of rates, then where the wrong
// bytes of each arm began and where they had been sent.
func (rep Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "kernel %s; %d-byte connections, %d at a time, over two unshaped veth paths, offloads off and a join each unless the arm says +offload or +nojoin\n\n", rep.Kernel, rep.Size, rep.Parallel)
	fmt.Fprintf(w, "%-14s %7s %6s %24s %7s %7s %15s %8s\n", "arm", "conns", "wrong", "per 10,000 (95% CI)", "failed", "joins", "flagged (wrong)", "took")
	for _, a := range rep.Arms {
		rate, lo, hi := a.Rate()
		fmt.Fprintf(w, "%-14s %7d %6d %24s %7d %7d %15s %8s\n", a.Name, a.Conns, a.Wrong,
			fmt.Sprintf("%.1f (%.1f-%.1f)", rate, lo, hi), a.Failed, a.Joins,
			flagged(a), a.Took.Round(100*time.Millisecond))
	}
	fmt.Fprintf(w, "\nflagged: connections during which a MIB counter of something amiss moved (%s); only measured when connections run one at a time\n", strings.Join(kernel.MPTCPAnomalies, ", "))
	for _, a := range rep.Arms {
		if a.Wire {
			fmt.Fprintf(w, "%s: the server's capture checked %d good connections on the wire, %d right (every segment as its DSS mapping says, every byte there); %d packets dropped by the capture\n",
				a.Name, a.WireChecked, a.WireRight, a.CaptureDrops)
			if a.WireOdd != nil {
				fmt.Fprintf(w, "  the first good connection not found right: %s\n", a.WireOdd.describe())
			}
		}
	}
	for _, a := range rep.Arms {
		if len(a.Findings) == 0 && len(a.Errors) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", a.Name)
		if csum := a.MIB["DataCsumErr"]; csum > 0 {
			fmt.Fprintf(w, "  DSS checksum errors: %d\n", csum)
		}
		for _, e := range a.Errors {
			fmt.Fprintf(w, "  failed: %s\n", e)
		}
		for _, f := range a.Findings {
			where := f.Origin()
			if d, ok := f.Shift(); ok {
				where += fmt.Sprintf(" (%+d bytes away)", d)
			}
			fmt.Fprintf(w, "  connection %d: first wrong byte at payload offset %d; %d wrong, the first stretch %d long; %s; counters %s\n",
				f.Conn, f.Offset, f.Wrong, f.Run, where, counters(f.Counters))
			if f.Wire != nil {
				fmt.Fprintf(w, "    %s\n", f.Wire.describe())
			}
		}
	}
}

// watch reads the anomaly counters of both ends after every connection:
// connections run one at a time, so what moved belongs to the last one.
type watch struct {
	ns   [2]string
	last [2]map[string]uint64
}

func newWatch(n *topo.Net) (*watch, error) {
	w := &watch{ns: [2]string{n.Client, n.Server}}
	_, err := w.next()
	return w, err
}

// next is what moved since the last call, as "client X" or "server X".
func (w *watch) next() (map[string]uint64, error) {
	var out map[string]uint64
	for i, ns := range w.ns {
		m, err := kernel.MPTCPMIB(ns)
		if err != nil {
			return nil, err
		}
		if w.last[i] != nil {
			for _, k := range kernel.MPTCPAnomalies {
				if d := m[k] - w.last[i][k]; d != 0 {
					if out == nil {
						out = map[string]uint64{}
					}
					out[[2]string{"client ", "server "}[i]+k] = d
				}
			}
		}
		w.last[i] = m
	}
	return out, nil
}

func counters(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, m[k])
	}
	return b.String()
}

func flagged(a ArmResult) string {
	if !a.Attributed {
		return "n/a (parallel)"
	}
	return fmt.Sprintf("%d (%d)", a.Flagged, a.WrongFlagged)
}

// busy starts bulk MPTCP transfers, one after another, on a network of
// their own (two unshaped paths, a join each), until stop.
func busy(prefix string) (stop func(), err error) {
	n, err := topo.Build(topo.Config{Prefix: prefix, Paths: []int{0, 1}, Bottlenecks: []topo.Shaping{{}, {}}, Subflows: true})
	if err != nil {
		return nil, err
	}
	srv, err := xfer.ListenWith(n.Server, netip.AddrPortFrom(topo.ServerAddr, 0), true, xfer.ServerOptions{NoVerify: true})
	if err != nil {
		n.Close()
		return nil, err
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
			}
			// Short enough that stop waits little for the last one.
			_, _ = xfer.Run(xfer.Options{NS: n.Client, Remote: srv.Addr(), MPTCP: true, For: 500 * time.Millisecond})
		}
	}()
	return func() {
		close(quit)
		<-done
		srv.Close()
		n.Close()
	}, nil
}
