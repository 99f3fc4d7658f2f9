// SPDX-License-Identifier: Apache-2.0

// Package mptcpnl is a small client for the kernel's "mptcp_pm" generic
// netlink family: the in-kernel path manager's endpoints and limits (what
// `ip mptcp endpoint` and `ip mptcp limits` manage) and the mptcp_pm_events
// multicast group, which reports connections and subflows as they come and go.
//
// A Conn sends commands; a Subscription receives events. They are separate
// sockets on purpose: a socket that has joined the event group would see
// events interleaved with command replies.
//
// Both commands and the event group need CAP_NET_ADMIN in the namespace.
package mptcpnl

import (
	"errors"
	"fmt"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// Conn is a generic netlink socket for mptcp_pm commands, bound to the network
// namespace it was dialed in. It is safe for concurrent use.
type Conn struct {
	c      *genetlink.Conn
	family genetlink.Family
}

// Dial opens a Conn in the network namespace of the calling thread: the
// process's namespace, unless called from inside netns.Do.
func Dial() (*Conn, error) {
	c, family, err := dialFamily()
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, family: family}, nil
}

// DialNS opens a Conn in the named network namespace (see package netns; ""
// is the process's). The socket stays in that namespace for its whole life.
func DialNS(name string) (*Conn, error) {
	if name == "" {
		return Dial()
	}
	return openIn(name, Dial)
}

// openIn opens a netlink socket inside a named network namespace; the
// socket keeps that namespace after the thread leaves it.
func openIn[T any](name string, open func() (T, error)) (T, error) {
	var v T
	err := netns.Do(name, func() error {
		var err error
		v, err = open()
		return err
	})
	if err != nil {
		return v, fmt.Errorf("mptcpnl: in netns %s: %w", name, err)
	}
	return v, nil
}

// dialFamily opens a generic netlink socket and resolves the mptcp_pm family,
// which both checks that the kernel has MPTCP and gives us the dynamically
// assigned family and group IDs.
func dialFamily() (*genetlink.Conn, genetlink.Family, error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return nil, genetlink.Family{}, fmt.Errorf("mptcpnl: dial generic netlink: %w", err)
	}
	family, err := c.GetFamily(familyName)
	if err != nil {
		c.Close()
		if errors.Is(err, unix.ENOENT) {
			return nil, genetlink.Family{}, fmt.Errorf("mptcpnl: generic netlink family %q not found (kernel without CONFIG_MPTCP?): %w", familyName, err)
		}
		return nil, genetlink.Family{}, fmt.Errorf("mptcpnl: get family %q: %w", familyName, err)
	}
	if family.Version < familyVersion {
		c.Close()
		return nil, genetlink.Family{}, fmt.Errorf("mptcpnl: family %q has version %d, want >= %d", familyName, family.Version, familyVersion)
	}
	// Extended acks make the kernel's reason ("limit greater than maximum",
	// "address not found", ...) part of the returned error.
	if err := c.SetOption(netlink.ExtendedAcknowledge, true); err != nil {
		c.Close()
		return nil, genetlink.Family{}, fmt.Errorf("mptcpnl: enable extended acks: %w", err)
	}
	return c, family, nil
}

// Close closes the socket.
func (c *Conn) Close() error { return c.c.Close() }

// FamilyID returns the generic netlink family ID the kernel assigned to
// mptcp_pm (what `genl ctrl get name mptcp_pm` shows).
func (c *Conn) FamilyID() uint16 { return c.family.ID }

// execute sends one command and returns the replies. Commands that only
// change state ask for an ack so that kernel errors are reported.
func (c *Conn) execute(cmd uint8, attrs []byte, flags netlink.HeaderFlags) ([]genetlink.Message, error) {
	req := genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: familyVersion},
		Data:   attrs,
	}
	return c.c.Execute(req, c.family.ID, netlink.Request|flags)
}

// Endpoints lists the path manager's endpoints (GET_ADDR dump).
func (c *Conn) Endpoints() ([]Endpoint, error) {
	msgs, err := c.execute(cmdGetAddr, nil, netlink.Dump)
	if err != nil {
		return nil, fmt.Errorf("mptcpnl: list endpoints: %w", err)
	}
	eps := make([]Endpoint, 0, len(msgs))
	for _, m := range msgs {
		e, err := decodeEndpointMessage(m.Data)
		if err != nil {
			return nil, fmt.Errorf("mptcpnl: list endpoints: %w", err)
		}
		eps = append(eps, e)
	}
	return eps, nil
}

// Endpoint returns the endpoint with the given ID (GET_ADDR). A missing
// endpoint is an error wrapping unix.EINVAL, which is what the kernel returns.
func (c *Conn) Endpoint(id uint8) (Endpoint, error) {
	attrs, err := encodeEndpointID(id, nil)
	if err != nil {
		return Endpoint{}, err
	}
	msgs, err := c.execute(cmdGetAddr, attrs, 0)
	if err != nil {
		return Endpoint{}, fmt.Errorf("mptcpnl: get endpoint %d: %w", id, err)
	}
	if len(msgs) != 1 {
		return Endpoint{}, fmt.Errorf("mptcpnl: get endpoint %d: %d replies, want 1", id, len(msgs))
	}
	e, err := decodeEndpointMessage(msgs[0].Data)
	if err != nil {
		return Endpoint{}, fmt.Errorf("mptcpnl: get endpoint %d: %w", id, err)
	}
	return e, nil
}

// AddEndpoint adds an endpoint (ADD_ADDR). With e.ID == 0 the kernel picks the
// ID; the reply does not carry it, so look it up with Endpoints if needed.
func (c *Conn) AddEndpoint(e Endpoint) error {
	attrs, err := encodeEndpoint(e)
	if err != nil {
		return fmt.Errorf("mptcpnl: add endpoint %v: %w", e, err)
	}
	if _, err := c.execute(cmdAddAddr, attrs, netlink.Acknowledge); err != nil {
		return fmt.Errorf("mptcpnl: add endpoint %v: %w", e, err)
	}
	return nil
}

// DelEndpoint deletes the endpoint with the given ID (DEL_ADDR). ID 0 is
// refused: it stands for each connection's initial address, the kernel wants
// the address too, and without one it reports success while doing nothing.
func (c *Conn) DelEndpoint(id uint8) error {
	if id == 0 {
		return errors.New("mptcpnl: delete endpoint: ID 0 cannot be deleted by ID")
	}
	attrs, err := encodeEndpointID(id, nil)
	if err != nil {
		return err
	}
	if _, err := c.execute(cmdDelAddr, attrs, netlink.Acknowledge); err != nil {
		return fmt.Errorf("mptcpnl: delete endpoint %d: %w", id, err)
	}
	return nil
}

// SetEndpointFlags changes the flags of an existing endpoint (SET_FLAGS). The
// in-kernel path manager only lets FlagBackup and FlagFullmesh change and
// ignores the other bits.
func (c *Conn) SetEndpointFlags(id uint8, flags EndpointFlags) error {
	attrs, err := encodeEndpointID(id, &flags)
	if err != nil {
		return err
	}
	if _, err := c.execute(cmdSetFlags, attrs, netlink.Acknowledge); err != nil {
		return fmt.Errorf("mptcpnl: set flags %v on endpoint %d: %w", flags, id, err)
	}
	return nil
}

// FlushEndpoints deletes all endpoints (FLUSH_ADDRS).
func (c *Conn) FlushEndpoints() error {
	if _, err := c.execute(cmdFlushAddrs, nil, netlink.Acknowledge); err != nil {
		return fmt.Errorf("mptcpnl: flush endpoints: %w", err)
	}
	return nil
}

// Limits returns the path manager limits of the namespace (GET_LIMITS).
func (c *Conn) Limits() (Limits, error) {
	msgs, err := c.execute(cmdGetLimits, nil, 0)
	if err != nil {
		return Limits{}, fmt.Errorf("mptcpnl: get limits: %w", err)
	}
	if len(msgs) != 1 {
		return Limits{}, fmt.Errorf("mptcpnl: get limits: %d replies, want 1", len(msgs))
	}
	l, err := decodeLimits(msgs[0].Data)
	if err != nil {
		return Limits{}, fmt.Errorf("mptcpnl: get limits: %w", err)
	}
	return l, nil
}

// SetLimits sets both limits (SET_LIMITS). The kernel rejects values above its
// maximum (8 in 6.18) with EINVAL.
func (c *Conn) SetLimits(l Limits) error {
	attrs, err := encodeLimits(l)
	if err != nil {
		return err
	}
	if _, err := c.execute(cmdSetLimits, attrs, netlink.Acknowledge); err != nil {
		return fmt.Errorf("mptcpnl: set limits %+v: %w", l, err)
	}
	return nil
}

// Subscription is a generic netlink socket that has joined the
// mptcp_pm_events group of its network namespace.
type Subscription struct {
	c      *genetlink.Conn
	family genetlink.Family
}

// Subscribe joins the mptcp_pm_events group in the network namespace of the
// calling thread (as for Dial). The kernel only builds events while someone is
// subscribed, so events from before Subscribe returns are not seen.
func Subscribe() (*Subscription, error) {
	c, family, err := dialFamily()
	if err != nil {
		return nil, err
	}
	var group uint32
	found := false
	for _, g := range family.Groups {
		if g.Name == eventGroup {
			group, found = g.ID, true
		}
	}
	if !found {
		c.Close()
		return nil, fmt.Errorf("mptcpnl: family %q has no multicast group %q", familyName, eventGroup)
	}
	if err := c.JoinGroup(group); err != nil {
		c.Close()
		return nil, fmt.Errorf("mptcpnl: join group %q: %w", eventGroup, err)
	}
	return &Subscription{c: c, family: family}, nil
}

// SubscribeNS is Subscribe inside the named network namespace.
func SubscribeNS(name string) (*Subscription, error) { return openIn(name, Subscribe) }

// Receive blocks until the kernel delivers events and returns them in order.
// Messages of other families are ignored. A message that does not decode is
// reported in the error while the other events of the batch are still
// returned, so callers should use the events even when err != nil; the
// Subscription stays usable. An error wrapping unix.ENOBUFS means the socket
// buffer overflowed and events were lost; the caller should resynchronise.
func (s *Subscription) Receive() ([]Event, error) {
	msgs, nlmsgs, err := s.c.Receive()
	if err != nil {
		return nil, fmt.Errorf("mptcpnl: receive events: %w", err)
	}
	events := make([]Event, 0, len(msgs))
	var errs []error
	for i, m := range msgs {
		if nlmsgs[i].Header.Type != netlink.HeaderType(s.family.ID) {
			continue
		}
		e, err := DecodeEvent(m.Header.Command, m.Data)
		if err != nil {
			errs = append(errs, fmt.Errorf("mptcpnl: %w", err))
			continue
		}
		events = append(events, e)
	}
	return events, errors.Join(errs...)
}

// SetReadDeadline makes a blocked or future Receive return a timeout error
// (os.ErrDeadlineExceeded) once t has passed. The zero time clears it.
func (s *Subscription) SetReadDeadline(t time.Time) error {
	return s.c.SetReadDeadline(t)
}

// Close leaves the group and closes the socket; a blocked Receive returns.
func (s *Subscription) Close() error { return s.c.Close() }
