// SPDX-License-Identifier: Apache-2.0

// Package ackwatch watches a receiver's ACK decisions in one network
// namespace, read-only, per kind of socket (plain TCP, MPTCP subflow): how
// many ACKs the kernel left to its delayed-ACK timer, which of
// __tcp_ack_snd_check's tests made each wait, and who sent it in the end
// (the timer, or the reader making room). bpf/lab/ackwatch.bpf.c says where
// it hooks. It exists for docs/kernel-faults.md section 3: a receiver
// holds one MPTCP connection's subflows' ACKs for the timer twice as
// often as a TCP flow's.
//
// It needs fentry/fexit programs: a kernel in lockdown (this project's
// 6.18 host) refuses them, the shared test kernel's VM allows them.
package ackwatch

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// Why an ACK waited for the timer: the last decision before it was sent,
// as bpf/lab/ackwatch.bpf.c numbers them (enum ackwatch_why).
const (
	OneSegment = iota // at most one full segment unacknowledged: the ordinary every-other ACK
	Window            // the window test failed, rcv_wnd within the socket's rcv_ssthresh
	Raised            // the window test failed, rcv_wnd above rcv_ssthresh (raised to the connection's)
	Other             // neither seen
	Whys
)

// Which condition of the reader's "pushed and everything read" rule
// stopped it from sending an ACK that waits on one segment, as
// bpf/lab/ackwatch.bpf.c numbers them (enum ackwatch_gate): plain TCP judges
// the socket's own receive memory (__tcp_cleanup_rbuf), MPTCP the whole
// connection's (mptcp_cleanup_rbuf, mptcp_subflow_could_cleanup).
const (
	GateOpen      = iota // every condition held: the reader sends it
	GateNotCopied        // the reader copied nothing this time
	GateNotPushed        // no PUSHED flag on the socket
	GateRmem             // receive memory not empty
	Gates
)

// GateName names a gate.
func GateName(g int) string {
	return [...]string{"open", "nothing copied", "not pushed", "receive memory in use"}[g]
}

// WhyName names a reason.
func WhyName(w int) string {
	return [...]string{"one segment", "window", "raised window", "other"}[w]
}

// Counts are one kind of socket's totals.
type Counts struct {
	ACKs       uint64       // every pure ACK sent (tcp_send_ack)
	Delayed    [Whys]uint64 // decisions to leave an ACK to the timer, by why
	ByTimer    [Whys]uint64 // ACKs the delayed-ACK timer sent, by why they waited
	ByReader   uint64       // ACKs the reader's clean-up (tcp_cleanup_rbuf) sent
	ReaderRuns uint64       // tcp_cleanup_rbuf calls
	// ReaderPending is how many of those found the timer armed: the
	// chances the reader had to send a waiting ACK.
	ReaderPending uint64
	ShortBytes    uint64 // what the failed window tests missed rcv_wnd by, summed
	// Gate: the readers that came by while an ACK waited on one segment,
	// by the first condition that kept them from sending it.
	Gate [Gates]uint64
}

// TimerACKs are the ACKs the delayed-ACK timer sent, whatever made them wait.
func (c Counts) TimerACKs() uint64 {
	var t uint64
	for _, v := range c.ByTimer {
		t += v
	}
	return t
}

// TimerShare is the part of the ACKs the timer sent.
func (c Counts) TimerShare() float64 {
	if c.ACKs == 0 {
		return 0
	}
	return float64(c.TimerACKs()) / float64(c.ACKs)
}

// Totals are the watch's counts for plain TCP sockets and MPTCP subflows.
type Totals struct {
	TCP, Subflow Counts
	// Misses are the program runs the kernel skipped (a program already
	// running on that CPU), summed over the hooks: what they would have
	// seen is not counted.
	Misses uint64
}

// Watch is a running watch.
type Watch struct {
	objs  ackwatchObjects
	links []link.Link
}

// Start loads and attaches the watch to the named network namespace.
func Start(namespace string) (*Watch, error) {
	if err := kernel.CheckPrivileges(); err != nil {
		return nil, err
	}
	if namespace == "" {
		return nil, errors.New("ackwatch: no namespace given: a watch covers one named network namespace")
	}
	ino, err := netns.Inode(namespace)
	if err != nil {
		return nil, fmt.Errorf("ackwatch: %w", err)
	}
	spec, err := loadAckwatch()
	if err != nil {
		return nil, fmt.Errorf("ackwatch: reading the object: %w", err)
	}
	if err := spec.Variables["netns_ino"].Set(ino); err != nil {
		return nil, fmt.Errorf("ackwatch: %w", err)
	}
	w := &Watch{}
	if err := spec.LoadAndAssign(&w.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		switch {
		case errors.As(err, &ve):
			return nil, fmt.Errorf("ackwatch: the kernel's verifier rejected the watch: %+v", ve)
		case errors.Is(err, unix.EPERM):
			return nil, errors.New("ackwatch: the kernel refused fentry/fexit programs (EPERM: a kernel in lockdown does); run it in a kernel that allows them, such as the shared test kernel's VM")
		}
		return nil, fmt.Errorf("ackwatch: loading (it needs fentry/fexit on __tcp_select_window, tcp_send_delayed_ack, tcp_delack_timer_handler, tcp_cleanup_rbuf, mptcp_cleanup_rbuf and tcp_send_ack): %w", err)
	}
	for _, p := range w.programs() {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			w.close()
			return nil, fmt.Errorf("ackwatch: attaching %s: %w", p, err)
		}
		w.links = append(w.links, l)
	}
	return w, nil
}

func (w *Watch) programs() []*ebpf.Program {
	o := &w.objs
	return []*ebpf.Program{o.AckwatchWindow, o.AckwatchDelayed, o.AckwatchTimerIn, o.AckwatchTimerOut,
		o.AckwatchReaderIn, o.AckwatchReaderOut, o.AckwatchMptcpReader, o.AckwatchAck}
}

// Totals sums the counts so far.
func (w *Watch) Totals() (Totals, error) {
	var t Totals
	for kind, into := range []*Counts{&t.TCP, &t.Subflow} {
		var per []ackwatchAckwatchCounts
		if err := w.objs.Counts.Lookup(uint32(kind), &per); err != nil {
			return Totals{}, fmt.Errorf("ackwatch: reading counts: %w", err)
		}
		for _, p := range per {
			into.ACKs += p.Acks
			for i := range into.Delayed {
				into.Delayed[i] += p.Delayed[i]
				into.ByTimer[i] += p.ByTimer[i]
			}
			into.ByReader += p.ByReader
			into.ReaderRuns += p.ReaderCalls
			into.ReaderPending += p.ReaderPending
			into.ShortBytes += p.ShortBytes
			for i := range into.Gate {
				into.Gate[i] += p.Gate[i]
			}
		}
	}
	for _, p := range w.programs() {
		if st, err := p.Stats(); err == nil {
			t.Misses += st.RecursionMisses
		}
	}
	return t, nil
}

// Stop detaches the watch and returns its totals.
func (w *Watch) Stop() (Totals, error) {
	for _, l := range w.links {
		l.Close()
	}
	w.links = nil
	t, err := w.Totals()
	w.close()
	return t, err
}

func (w *Watch) close() {
	for _, l := range w.links {
		l.Close()
	}
	w.links = nil
	w.objs.Close()
}

// Add is the sum of two readings (of different watches, say).
func Add(a, b Totals) Totals {
	return Totals{TCP: a.TCP.add(b.TCP, 1), Subflow: a.Subflow.add(b.Subflow, 1), Misses: a.Misses + b.Misses}
}

// Sub is what happened between two readings a and b (b taken later).
func Sub(b, a Totals) Totals {
	return Totals{TCP: b.TCP.add(a.TCP, -1), Subflow: b.Subflow.add(a.Subflow, -1), Misses: b.Misses - a.Misses}
}

// add is a + sign*b (sign 1 or -1; unsigned arithmetic wraps back).
func (a Counts) add(b Counts, sign int) Counts {
	f := func(x, y uint64) uint64 {
		if sign < 0 {
			return x - y
		}
		return x + y
	}
	d := Counts{ACKs: f(a.ACKs, b.ACKs), ByReader: f(a.ByReader, b.ByReader), ReaderRuns: f(a.ReaderRuns, b.ReaderRuns),
		ReaderPending: f(a.ReaderPending, b.ReaderPending), ShortBytes: f(a.ShortBytes, b.ShortBytes)}
	for i := range d.Delayed {
		d.Delayed[i] = f(a.Delayed[i], b.Delayed[i])
		d.ByTimer[i] = f(a.ByTimer[i], b.ByTimer[i])
	}
	for i := range d.Gate {
		d.Gate[i] = f(a.Gate[i], b.Gate[i])
	}
	return d
}

// Describe is one kind's counts in one line.
func (c Counts) Describe() string {
	s := fmt.Sprintf("%d ACKs, %.2f%% by the timer", c.ACKs, 100*c.TimerShare())
	for i := 0; i < Whys; i++ {
		s += fmt.Sprintf("; %s: %d waited, %d by the timer", WhyName(i), c.Delayed[i], c.ByTimer[i])
	}
	s += fmt.Sprintf("; reader: %d runs, %d with the timer armed, %d ACKs", c.ReaderRuns, c.ReaderPending, c.ByReader)
	s += "; readers by a one-segment ACK:"
	for i := 0; i < Gates; i++ {
		s += fmt.Sprintf(" %s %d", GateName(i), c.Gate[i])
	}
	if n := c.Delayed[Window] + c.Delayed[Raised]; n > 0 {
		s += fmt.Sprintf("; window short by %d B on average", c.ShortBytes/n)
	}
	return s
}
