// SPDX-License-Identifier: Apache-2.0

package daemon

// Discovering the MPTCP connections the path controller controls: the
// engine the manager (pathctl.go) is driven by, and the real one, which
// follows the path manager's events or scans sock_diag.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// PathEngine is what the daemon needs to control paths; tests use a fake.
type PathEngine interface {
	// Watch reports the MPTCP connections of a network namespace ("" the
	// daemon's own) until ctx ends (then it returns nil); an error says it
	// cannot follow them (any more).
	Watch(ctx context.Context, netns string, report func(ConnChange)) error
	// Control runs a controller: pathctl.Run.
	Control(ctx context.Context, o pathctl.Options) error
}

// ChangeKind says what a ConnChange reports.
type ChangeKind int

// What a PathEngine's Watch reports.
const (
	// Watching: how connections are discovered from now on (How), and
	// why not through the path manager's events when they are not (Why).
	Watching ChangeKind = iota
	// Present: a scan found these connections open (Conns); connections
	// not listed are gone.
	Present
	// Opened: a connection was established (Conn).
	Opened
	// Closed: a connection closed (Conn.Token).
	Closed
)

// ConnChange is one report of a PathEngine's Watch.
type ConnChange struct {
	Kind  ChangeKind
	How   string // Watching: "events" or "scan"
	Why   error  // Watching "scan": why the events are unavailable
	Conn  PathConn
	Conns []PathConn
}

// PathConn is an MPTCP connection as discovery sees it: its token and its
// initial subflow's addresses.
type PathConn struct {
	Token         uint32
	Local, Remote netip.AddrPort
}

// KernelPaths is the real engine: mptcp_pm events (pkg/mptcpnl), sock_diag
// scans where the events are unavailable, and pathctl.Run.
type KernelPaths struct{}

// ScanInterval spaces the sock_diag scans of a namespace whose events are
// unavailable.
const ScanInterval = time.Second

// Control implements PathEngine.
func (KernelPaths) Control(ctx context.Context, o pathctl.Options) error { return pathctl.Run(ctx, o) }

// Watch implements PathEngine: it subscribes to the namespace's mptcp_pm
// events and scans once for the connections opened before; where the
// events are unavailable it scans every ScanInterval. A scan also follows
// every loss of events (a full receive buffer).
func (KernelPaths) Watch(ctx context.Context, ns string, report func(ConnChange)) error {
	sd, err := sockdiag.DialNS(ns)
	if err != nil {
		return err
	}
	defer sd.Close()
	scan := func() error {
		conns, err := scanConns(sd)
		if err == nil {
			report(ConnChange{Kind: Present, Conns: conns})
		}
		return err
	}
	var sub *mptcpnl.Subscription
	if ns == "" {
		sub, err = mptcpnl.Subscribe()
	} else {
		sub, err = mptcpnl.SubscribeNS(ns)
	}
	if err != nil {
		report(ConnChange{Kind: Watching, How: "scan", Why: err})
		tick := time.NewTicker(ScanInterval)
		defer tick.Stop()
		for {
			if err := scan(); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
	}
	defer sub.Close()
	stop := context.AfterFunc(ctx, func() { _ = sub.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	report(ConnChange{Kind: Watching, How: "events"})
	// Subscribed first, so a connection opened meanwhile is in the scan,
	// in the events, or in both (the manager takes it once).
	if err := scan(); err != nil {
		return err
	}
	for {
		evs, err := sub.Receive()
		for _, e := range evs {
			switch e.Type {
			case mptcpnl.EventEstablished:
				report(ConnChange{Kind: Opened, Conn: PathConn{Token: e.Token,
					Local: netip.AddrPortFrom(e.Saddr.Unmap(), e.Sport), Remote: netip.AddrPortFrom(e.Daddr.Unmap(), e.Dport)}})
			case mptcpnl.EventClosed:
				report(ConnChange{Kind: Closed, Conn: PathConn{Token: e.Token}})
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		var errno unix.Errno
		switch {
		case err == nil:
		case errors.Is(err, unix.ENOBUFS):
			if err := scan(); err != nil {
				return err
			}
		case errors.As(err, &errno):
			return fmt.Errorf("mptcp_pm events: %w", err)
		}
		// Anything else is a message that did not decode: the
		// subscription is fine.
	}
}

// scanConns lists the MPTCP connections with an established subflow.
func scanConns(sd *sockdiag.Conn) ([]PathConn, error) {
	byToken := map[uint32]*PathConn{}
	var order []uint32
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		socks, err := sd.TCP(fam, sockdiag.StateSet(sockdiag.Established))
		if err != nil {
			return nil, fmt.Errorf("sock_diag: %w", err)
		}
		for _, s := range socks {
			if !s.MPTCP || s.Token == 0 {
				continue
			}
			c := PathConn{Token: s.Token, Local: unmap(s.Local), Remote: unmap(s.Remote)}
			prev := byToken[s.Token]
			switch {
			case prev == nil:
				byToken[s.Token] = &c
				order = append(order, s.Token)
			case s.LocalID == 0 && s.RemoteID == 0:
				// The initial subflow's addresses name the connection.
				*prev = c
			}
		}
	}
	out := make([]PathConn, 0, len(order))
	for _, t := range order {
		out = append(out, *byToken[t])
	}
	return out, nil
}

func unmap(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }
