// SPDX-License-Identifier: Apache-2.0

// Package cawatch watches the congestion state of every TCP socket (MPTCP
// subflows included) of one network namespace, read-only, for windows no
// congestion control could have set: the ssthresh anomaly of
// docs/kernel-faults.md, section 2. bpf/lab/cawatch.bpf.c hooks the kernel
// where it stores or uses ssthresh (CA state changes, each step of
// proportional rate reduction, each received segment, each undo) and
// reports every socket whose implausible values change, with its own and
// its MPTCP parents' addresses.
//
// It changes nothing it watches, so the same watch measures the kernel's
// own congestion controls and BPF ones, MPTCP subflows and plain TCP alike.
package cawatch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// DefaultLimit is the largest plausible window, in packets: far above any
// window a real path needs (a 4 MB send buffer is under 3,000 packets) and
// far below the values seen (hundreds of millions).
const DefaultLimit = 1 << 20

// Hook is where the kernel was when a value was read.
type Hook uint32

// The hooks, as bpf/lab/cawatch.bpf.c numbers them (enum cawatch_hook).
const (
	State Hook = iota // tcp_cong_state_set: a CA state change
	PRR               // tcp_cwnd_reduction_tp: a step of proportional rate reduction
	Probe             // tcp_probe: a segment received
	Undo              // fentry tcp_undo_cwnd_reduction: an undo
	hooks
)

func (h Hook) String() string {
	switch h {
	case State:
		return "state"
	case PRR:
		return "prr"
	case Probe:
		return "probe"
	case Undo:
		return "undo"
	}
	return fmt.Sprintf("hook%d", uint32(h))
}

// CA states as the kernel numbers them (enum tcp_ca_state).
var caStates = [...]string{"Open", "Disorder", "CWR", "Recovery", "Loss"}

// CAState names a CA state.
func CAState(s uint32) string {
	if int(s) < len(caStates) {
		return caStates[s]
	}
	return fmt.Sprintf("state%d", s)
}

// Sighting is one socket whose implausible values changed.
type Sighting struct {
	AtNs          uint64 // CLOCK_MONOTONIC
	Hook          Hook
	CAState       uint32 // before a state change
	NewState      uint32 // the state entered (State only)
	Cwnd          uint32
	Ssthresh      uint32
	PriorSsthresh uint32
	PriorCwnd     uint32
	PRRDelivered  uint32
	PRROut        uint32
	MPTCP         bool
	CC            string
	// ssthresh as the watch read it before this sighting: at the socket's
	// last CA state change, and at the start of its last PRR step (with
	// prr_delivered then).
	StateSsthresh, PRRSsthresh, PRRStep uint32
	// Kernel addresses: the socket, its MPTCP subflow context and its
	// MPTCP socket (0 for plain TCP).
	Sock, SubflowCtx, MSK uint64
}

// Counts are the watch's totals over the namespace's sockets.
type Counts struct {
	Calls       [hooks]uint64 // hook runs
	Implausible [hooks]uint64 // of them, with an implausible value
	Entered     [5]uint64     // state changes into Open, Disorder, CWR, Recovery, Loss
	Lost        uint64        // sightings the ring buffer had no room for
	// Misses are the runs the kernel skipped, per hook: a program already
	// running on the CPU (interrupted by a softirq that hit the same
	// hook) is not entered again. What a skipped run would have read is
	// not seen.
	Misses [hooks]uint64
}

// Reductions are the window reductions the namespace's sockets entered:
// CWR, Recovery and Loss.
func (c Counts) Reductions() uint64 { return c.Entered[2] + c.Entered[3] + c.Entered[4] }

// Options of a watch.
type Options struct {
	Namespace string // the named network namespace watched
	Limit     uint32 // the largest plausible window in packets (0: DefaultLimit)
}

// Watch is a running watch.
type Watch struct {
	objs   core
	undo   *ebpf.Program
	links  []link.Link
	trace  *structops.TraceReader[cawatchCawatchSighting]
	NoUndo error // why the undo hook is not attached, or nil
}

// Start loads and attaches the watch.
func Start(o Options) (*Watch, error) {
	if err := kernel.CheckPrivileges(); err != nil {
		return nil, err
	}
	if o.Limit == 0 {
		o.Limit = DefaultLimit
	}
	ino, err := nsInode(o.Namespace)
	if err != nil {
		return nil, err
	}
	spec, err := loadCawatch()
	if err != nil {
		return nil, fmt.Errorf("cawatch: reading the object: %w", err)
	}
	if err := spec.Variables["netns_ino"].Set(ino); err != nil {
		return nil, fmt.Errorf("cawatch: %w", err)
	}
	if err := spec.Variables["limit"].Set(o.Limit); err != nil {
		return nil, fmt.Errorf("cawatch: %w", err)
	}
	w := &Watch{}
	if err := spec.LoadAndAssign(&w.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("cawatch: the kernel's verifier rejected the watch: %+v", ve)
		}
		return nil, fmt.Errorf("cawatch: loading (it needs BTF tracing programs and the tcp_cong_state_set, tcp_cwnd_reduction_tp and tcp_probe tracepoints: tcp_cwnd_reduction_tp came in Linux 6.15): %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			w.close()
		}
	}()
	for _, p := range []*ebpf.Program{w.objs.State, w.objs.PRR, w.objs.Probe} {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			return nil, fmt.Errorf("cawatch: attaching %s: %w", p, err)
		}
		w.links = append(w.links, l)
	}
	w.NoUndo = w.attachUndo(spec)
	if w.trace, err = structops.ReadTrace[cawatchCawatchSighting](w.objs.Sightings, "lab/cawatch's cawatchCawatchSighting and bpf/lab/cawatch.bpf.c's struct cawatch_sighting"); err != nil {
		return nil, fmt.Errorf("cawatch: reading sightings: %w", err)
	}
	ok = true
	return w, nil
}

// core is what every watch needs: the tracepoint programs and the maps.
type core struct {
	State     *ebpf.Program `ebpf:"cawatch_state"`
	PRR       *ebpf.Program `ebpf:"cawatch_prr"`
	Probe     *ebpf.Program `ebpf:"cawatch_probe"`
	Counts    *ebpf.Map     `ebpf:"counts"`
	Sightings *ebpf.Map     `ebpf:"sightings"`
	Seen      *ebpf.Map     `ebpf:"seen"`
}

func (c *core) Close() {
	for _, p := range []*ebpf.Program{c.State, c.PRR, c.Probe} {
		if p != nil {
			p.Close()
		}
	}
	for _, m := range []*ebpf.Map{c.Counts, c.Sightings, c.Seen} {
		if m != nil {
			m.Close()
		}
	}
}

// attachUndo adds the fentry program on tcp_undo_cwnd_reduction, sharing
// the core's maps, where the kernel allows it, and says why not where it
// does not: a kernel in lockdown (this project's 6.18 host, which forces
// integrity mode) refuses fentry programs with EPERM, and a kernel may
// have inlined the static function away. The tracepoints see what an undo
// leaves at the next segment anyway.
func (w *Watch) attachUndo(spec *ebpf.CollectionSpec) error {
	var undo struct {
		Undo *ebpf.Program `ebpf:"cawatch_undo"`
	}
	if err := spec.LoadAndAssign(&undo, &ebpf.CollectionOptions{MapReplacements: map[string]*ebpf.Map{
		"counts": w.objs.Counts, "sightings": w.objs.Sightings, "seen": w.objs.Seen,
	}}); err != nil {
		if errors.Is(err, unix.EPERM) {
			return errors.New("the kernel refused the fentry program on tcp_undo_cwnd_reduction (EPERM: a kernel in lockdown does); the tracepoints see what an undo leaves at the next segment")
		}
		return fmt.Errorf("loading the fentry program on tcp_undo_cwnd_reduction: %w", err)
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: undo.Undo})
	if err != nil {
		undo.Undo.Close()
		return fmt.Errorf("attaching to tcp_undo_cwnd_reduction: %w", err)
	}
	w.undo = undo.Undo
	w.links = append(w.links, l)
	return nil
}

func nsInode(name string) (uint32, error) {
	if name == "" {
		return 0, errors.New("cawatch: no namespace given: a watch covers one named network namespace")
	}
	ino, err := netns.Inode(name)
	if err != nil {
		return 0, fmt.Errorf("cawatch: %w", err)
	}
	return ino, nil
}

// Counts sums the totals so far.
func (w *Watch) Counts() (Counts, error) {
	var per []cawatchCawatchCounts
	if err := w.objs.Counts.Lookup(uint32(0), &per); err != nil {
		return Counts{}, fmt.Errorf("cawatch: reading counts: %w", err)
	}
	var c Counts
	for _, p := range per {
		for i := range c.Calls {
			c.Calls[i] += p.Calls[i]
			c.Implausible[i] += p.Implausible[i]
		}
		for i := range c.Entered {
			c.Entered[i] += p.Entered[i]
		}
		c.Lost += p.Lost
	}
	return c, nil
}

// Stop detaches the watch and returns its totals and every sighting.
func (w *Watch) Stop() (Counts, []Sighting, error) {
	for _, l := range w.links {
		l.Close()
	}
	w.links = nil
	c, err := w.Counts()
	for i, p := range []*ebpf.Program{w.objs.State, w.objs.PRR, w.objs.Probe, w.undo} {
		if p == nil {
			continue
		}
		if st, serr := p.Stats(); serr == nil {
			c.Misses[i] = st.RecursionMisses
		}
	}
	raw, terr := w.trace.Stop()
	w.trace = nil
	w.close()
	out := make([]Sighting, len(raw))
	for i, r := range raw {
		out[i] = Sighting{
			AtNs: r.AtNs, Hook: Hook(r.Hook), CAState: r.CaState, NewState: r.NewState,
			Cwnd: r.Cwnd, Ssthresh: r.Ssthresh, PriorSsthresh: r.PriorSsthresh, PriorCwnd: r.PriorCwnd,
			PRRDelivered: r.PrrDelivered, PRROut: r.PrrOut, MPTCP: r.Mptcp != 0, CC: kernel.CString(r.Cc[:]),
			Sock: r.Sk, SubflowCtx: r.Ctx, MSK: r.Msk,
			StateSsthresh: r.StateSsthresh, PRRSsthresh: r.PrrSsthresh, PRRStep: r.PrrStep,
		}
	}
	return c, out, errors.Join(err, terr)
}

func (w *Watch) close() {
	for _, l := range w.links {
		l.Close()
	}
	if w.trace != nil {
		_, _ = w.trace.Stop()
	}
	if w.undo != nil {
		w.undo.Close()
	}
	w.objs.Close()
}

// Implausible says whether a window of w packets is above limit and not
// the kernel's "no ssthresh yet" (TCP_INFINITE_SSTHRESH), as the watch
// judges it.
func Implausible(w, limit uint32) bool { return w > limit && w != 0x7fffffff }

// nearBytes is how far from one of the sighting's own objects a value may
// point and still be named as pointing into it.
const nearBytes = 64 << 10

// Near names the sighting's object whose address's low 32 bits lie within
// 64 KiB of v ("sock+0x1c8"), or "" if none does: a value that is the low
// half of a pointer into the socket's own structures was stored by code
// that meant to store that pointer.
func (s Sighting) Near(v uint32) string {
	for _, o := range []struct {
		name string
		addr uint64
	}{{"sock", s.Sock}, {"subflow_ctx", s.SubflowCtx}, {"msk", s.MSK}} {
		if o.addr == 0 {
			continue
		}
		d := int64(v) - int64(uint32(o.addr))
		if d > -nearBytes && d < nearBytes {
			if d < 0 {
				return fmt.Sprintf("%s-%#x", o.name, -d)
			}
			return fmt.Sprintf("%s+%#x", o.name, d)
		}
	}
	return ""
}

// Describe is the sighting in one line, each implausible value with the
// object it points near, if any.
func (s Sighting) Describe(limit uint32) string {
	kind := "tcp"
	if s.MPTCP {
		kind = "mptcp subflow"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "t=%.3fs %s %s (%s) sock %#x in %s", float64(s.AtNs)/1e9, s.Hook, kind, s.CC, s.Sock, CAState(s.CAState))
	if s.Hook == State {
		fmt.Fprintf(&b, "->%s", CAState(s.NewState))
	}
	for _, f := range []struct {
		name string
		v    uint32
	}{{"cwnd", s.Cwnd}, {"ssthresh", s.Ssthresh}, {"prior_ssthresh", s.PriorSsthresh}, {"prior_cwnd", s.PriorCwnd}} {
		fmt.Fprintf(&b, " %s=%d", f.name, f.v)
		if Implausible(f.v, limit) {
			b.WriteString("!")
			if near := s.Near(f.v); near != "" {
				fmt.Fprintf(&b, "(=%s)", near)
			} else {
				fmt.Fprintf(&b, "(%#x)", f.v)
			}
		}
	}
	fmt.Fprintf(&b, " prr %d/%d; before: ssthresh %d at the last state change, %d at the last prr step (delivered %d)",
		s.PRRDelivered, s.PRROut, s.StateSsthresh, s.PRRSsthresh, s.PRRStep)
	return b.String()
}
