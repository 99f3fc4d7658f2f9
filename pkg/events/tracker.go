// SPDX-License-Identifier: Apache-2.0

// Package events follows MPTCP connections and their subflows through the
// kernel's mptcp_pm netlink events (pkg/mptcpnl): which connections exist,
// the path manager's address ids of each subflow, when they opened and
// closed, and how many events of each kind arrived.
//
// Events are per network namespace: a Tracker fed by one Subscription knows
// the connections of that namespace only, and only from the moment it
// subscribed (a connection first seen through a subflow event has no
// creation time).
package events

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
)

// Subflow is one subflow as the path manager reported it.
type Subflow struct {
	LocalID     uint8          `json:"local_id"`
	RemoteID    uint8          `json:"remote_id"`
	Local       netip.AddrPort `json:"local"`
	Remote      netip.AddrPort `json:"remote"`
	Backup      bool           `json:"backup"`
	Established time.Time      `json:"established,omitzero"`
	Closed      time.Time      `json:"closed,omitzero"`
	Error       int            `json:"error,omitempty"` // errno when it closed
}

// Conn is one MPTCP connection.
type Conn struct {
	Token       uint32         `json:"token"`
	ServerSide  bool           `json:"server_side"`
	Local       netip.AddrPort `json:"local"` // the initial subflow's addresses
	Remote      netip.AddrPort `json:"remote"`
	Created     time.Time      `json:"created,omitzero"` // zero: created before the subscription
	Established time.Time      `json:"established,omitzero"`
	Closed      time.Time      `json:"closed,omitzero"`
	Subflows    []Subflow      `json:"subflows"` // every subflow seen, in order of appearance
	Announced   []netip.Addr   `json:"announced,omitempty"`
}

// Open reports whether the connection has not closed.
func (c *Conn) Open() bool { return c.Closed.IsZero() }

// Subflow returns the subflow with these addresses, if one was reported.
func (c *Conn) Subflow(local, remote netip.AddrPort) (Subflow, bool) {
	for _, s := range c.Subflows {
		if s.Local == local && s.Remote == remote {
			return s, true
		}
	}
	return Subflow{}, false
}

func (c *Conn) clone() Conn {
	d := *c
	d.Subflows = append([]Subflow(nil), c.Subflows...)
	d.Announced = append([]netip.Addr(nil), c.Announced...)
	return d
}

// Tracker keeps the state the events describe. Safe for concurrent use.
type Tracker struct {
	mu         sync.Mutex
	open       map[uint32]*Conn
	closed     []*Conn // most recent last, at most keepClosed
	keepClosed int
	counts     map[mptcpnl.EventType]uint64
	overruns   uint64 // receive buffer overflows (events lost)
	errors     uint64 // events that did not decode
	since      time.Time
}

// NewTracker returns a tracker that remembers the last keepClosed closed
// connections.
func NewTracker(keepClosed int) *Tracker {
	return &Tracker{open: map[uint32]*Conn{}, keepClosed: keepClosed, counts: map[mptcpnl.EventType]uint64{}, since: time.Now()}
}

func addrPort(a netip.Addr, p uint16) netip.AddrPort {
	if !a.IsValid() {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(a.Unmap(), p)
}

func (t *Tracker) conn(token uint32) *Conn {
	c := t.open[token]
	if c == nil {
		c = &Conn{Token: token}
		t.open[token] = c
	}
	return c
}

// Handle applies one event; now is when it arrived.
func (t *Tracker) Handle(e mptcpnl.Event, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts[e.Type]++
	local, remote := addrPort(e.Saddr, e.Sport), addrPort(e.Daddr, e.Dport)
	switch e.Type {
	case mptcpnl.EventCreated:
		// A token reused after a close we missed starts afresh.
		c := &Conn{Token: e.Token, Created: now, ServerSide: e.ServerSide, Local: local, Remote: remote}
		c.Subflows = []Subflow{{LocalID: e.LocalID, RemoteID: e.RemoteID, Local: local, Remote: remote}}
		t.open[e.Token] = c
	case mptcpnl.EventEstablished:
		c := t.conn(e.Token)
		c.Established, c.ServerSide = now, c.ServerSide || e.ServerSide
		if !c.Local.IsValid() {
			c.Local, c.Remote = local, remote
		}
		s := c.subflow(local, remote, e)
		s.Established = now
	case mptcpnl.EventSubEstablished:
		c := t.conn(e.Token)
		s := c.subflow(local, remote, e)
		s.Established, s.Backup, s.Closed = now, e.Backup, time.Time{}
	case mptcpnl.EventSubClosed:
		c := t.conn(e.Token)
		s := c.subflow(local, remote, e)
		s.Closed, s.Error = now, e.Error
	case mptcpnl.EventSubPriority:
		c := t.conn(e.Token)
		c.subflow(local, remote, e).Backup = e.Backup
	case mptcpnl.EventAnnounced:
		c := t.conn(e.Token)
		c.Announced = append(c.Announced, e.Daddr)
	case mptcpnl.EventClosed:
		c := t.open[e.Token]
		if c == nil {
			c = &Conn{Token: e.Token}
		}
		delete(t.open, e.Token)
		c.Closed = now
		for i := range c.Subflows {
			if c.Subflows[i].Closed.IsZero() {
				c.Subflows[i].Closed = now
			}
		}
		if t.keepClosed > 0 {
			t.closed = append(t.closed, c)
			if len(t.closed) > t.keepClosed {
				t.closed = append(t.closed[:0:0], t.closed[len(t.closed)-t.keepClosed:]...)
			}
		}
	}
}

// subflow finds or adds the subflow with these addresses.
func (c *Conn) subflow(local, remote netip.AddrPort, e mptcpnl.Event) *Subflow {
	for i := range c.Subflows {
		s := &c.Subflows[i]
		if s.Local == local && s.Remote == remote {
			s.LocalID, s.RemoteID = e.LocalID, e.RemoteID
			return s
		}
	}
	c.Subflows = append(c.Subflows, Subflow{LocalID: e.LocalID, RemoteID: e.RemoteID, Local: local, Remote: remote, Backup: e.Backup})
	return &c.Subflows[len(c.Subflows)-1]
}

// State is a copy of what a tracker knows.
type State struct {
	Since    time.Time         `json:"since"` // events before this were not seen
	Open     []Conn            `json:"open"`
	Closed   []Conn            `json:"closed"` // most recent first
	Counts   map[string]uint64 `json:"counts"` // events by type (CREATED, SUB_ESTABLISHED, ...)
	Overruns uint64            `json:"overruns"`
	Errors   uint64            `json:"errors"`
}

// Snapshot copies the tracker's state; open connections sorted by token.
func (t *Tracker) Snapshot() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := State{Since: t.since, Counts: map[string]uint64{}, Overruns: t.overruns, Errors: t.errors,
		Open: make([]Conn, 0, len(t.open)), Closed: make([]Conn, 0, len(t.closed))}
	for _, c := range t.open {
		s.Open = append(s.Open, c.clone())
	}
	sort.Slice(s.Open, func(i, j int) bool { return s.Open[i].Token < s.Open[j].Token })
	for i := len(t.closed) - 1; i >= 0; i-- {
		s.Closed = append(s.Closed, t.closed[i].clone())
	}
	for k, v := range t.counts {
		s.Counts[k.String()] = v
	}
	return s
}

// Lookup returns the open connection with this token, or the most recently
// closed one.
func (t *Tracker) Lookup(token uint32) (Conn, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.open[token]; c != nil {
		return c.clone(), true
	}
	for i := len(t.closed) - 1; i >= 0; i-- {
		if t.closed[i].Token == token {
			return t.closed[i].clone(), true
		}
	}
	return Conn{}, false
}

// Counts returns the number of events per type so far.
func (t *Tracker) Counts() map[mptcpnl.EventType]uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[mptcpnl.EventType]uint64, len(t.counts))
	for k, v := range t.counts {
		out[k] = v
	}
	return out
}

// Overruns is how many times the kernel dropped events because the
// receive buffer was full.
func (t *Tracker) Overruns() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.overruns
}

// OpenCount is the number of open connections the tracker knows.
func (t *Tracker) OpenCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open)
}

// Watch subscribes to the mptcp_pm events of the named network namespace
// ("" for the caller's) and feeds them to the tracker until ctx ends. It
// returns once subscribed; done receives the loop's end (nil after ctx
// ended).
func (t *Tracker) Watch(ctx context.Context, netns string) (done <-chan error, err error) {
	var sub *mptcpnl.Subscription
	if netns == "" {
		sub, err = mptcpnl.Subscribe()
	} else {
		sub, err = mptcpnl.SubscribeNS(netns)
	}
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.since = time.Now()
	t.mu.Unlock()
	ch := make(chan error, 1)
	stop := context.AfterFunc(ctx, func() { _ = sub.SetReadDeadline(time.Unix(1, 0)) })
	go func() {
		defer stop()
		defer sub.Close()
		ch <- t.run(ctx, sub)
	}()
	return ch, nil
}

func (t *Tracker) run(ctx context.Context, sub *mptcpnl.Subscription) error {
	for {
		evs, err := sub.Receive()
		now := time.Now()
		for _, e := range evs {
			t.Handle(e, now)
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case errors.Is(err, unix.ENOBUFS):
			t.mu.Lock()
			t.overruns++
			t.mu.Unlock()
		case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, os.ErrClosed), errors.Is(err, net.ErrClosed):
			return nil
		case len(evs) > 0 || isDecodeError(err):
			t.mu.Lock()
			t.errors++
			t.mu.Unlock()
		default:
			return fmt.Errorf("mptcp_pm events: %w", err)
		}
	}
}

// isDecodeError tells a message that did not decode (the subscription is
// still fine) from a broken socket.
func isDecodeError(err error) bool {
	var errno unix.Errno
	return !errors.As(err, &errno)
}
