// SPDX-License-Identifier: Apache-2.0

package mptcpnl

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/mdlayher/netlink"
)

// EventType is the generic netlink command of an event message
// (enum mptcp_event_type).
type EventType uint8

// Event types: enum mptcp_event_type. CREATED..SUB_PRIORITY are in the 6.1
// header; LISTENER_CREATED and LISTENER_CLOSED (6.2+) only in the 6.18 BTF.
// The gaps (4, 5, 8, 9, 12, 14) are unused numbers in the kernel enum.
const (
	EventCreated         EventType = 1  // MPTCP_EVENT_CREATED
	EventEstablished     EventType = 2  // MPTCP_EVENT_ESTABLISHED
	EventClosed          EventType = 3  // MPTCP_EVENT_CLOSED
	EventAnnounced       EventType = 6  // MPTCP_EVENT_ANNOUNCED
	EventRemoved         EventType = 7  // MPTCP_EVENT_REMOVED
	EventSubEstablished  EventType = 10 // MPTCP_EVENT_SUB_ESTABLISHED
	EventSubClosed       EventType = 11 // MPTCP_EVENT_SUB_CLOSED
	EventSubPriority     EventType = 13 // MPTCP_EVENT_SUB_PRIORITY
	EventListenerCreated EventType = 15 // MPTCP_EVENT_LISTENER_CREATED
	EventListenerClosed  EventType = 16 // MPTCP_EVENT_LISTENER_CLOSED
)

var eventTypeNames = map[EventType]string{
	EventCreated:         "CREATED",
	EventEstablished:     "ESTABLISHED",
	EventClosed:          "CLOSED",
	EventAnnounced:       "ANNOUNCED",
	EventRemoved:         "REMOVED",
	EventSubEstablished:  "SUB_ESTABLISHED",
	EventSubClosed:       "SUB_CLOSED",
	EventSubPriority:     "SUB_PRIORITY",
	EventListenerCreated: "LISTENER_CREATED",
	EventListenerClosed:  "LISTENER_CLOSED",
}

// String returns the kernel's name without the MPTCP_EVENT_ prefix, or
// EventType(N) for types this package does not know (newer kernels).
func (t EventType) String() string {
	if n, ok := eventTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// EventFlags are the MPTCP_PM_EV_FLAG_* bits of MPTCP_ATTR_FLAGS.
type EventFlags uint16

// Event flags: MPTCP_PM_EV_FLAG_* #defines in include/uapi/linux/mptcp.h (not
// in BTF). DENY_JOIN_ID0 is in the 6.1 header; SERVER_SIDE was added in 6.18
// (upstream header; the integration test checks this kernel sets it).
const (
	EventFlagDenyJoinID0 EventFlags = 1 << 0 // peer does not accept joins to its initial address
	EventFlagServerSide  EventFlags = 1 << 1 // 6.18+: this side accepted the connection
)

// Event is one decoded mptcp_pm_events message. Which fields are set depends
// on the type (see the table in include/uapi/linux/mptcp.h); fields whose
// attribute was absent keep their zero value. Note that an ID of 0 is also a
// real ID (that of the initial subflow's addresses).
type Event struct {
	Type EventType
	// Token identifies the MPTCP connection on this host (the local token).
	Token uint32
	// Family is the address family of the addresses (AF_INET or AF_INET6).
	Family uint16
	// LocalID and RemoteID are the address IDs of a subflow, or (RemoteID
	// only) of an address announced or removed by the peer.
	LocalID, RemoteID uint8
	Saddr, Daddr      netip.Addr
	// Sport and Dport are in host byte order (the kernel sends them in
	// network byte order).
	Sport, Dport uint16
	Backup       bool
	// Error is the subflow's pending socket error (an errno), 0 if none.
	Error int
	Flags EventFlags
	// Timeout is MPTCP_ATTR_TIMEOUT as sent by the kernel.
	Timeout uint32
	// IfIndex is the interface a subflow is bound to; 0 if unbound.
	IfIndex     int
	ResetReason uint32
	ResetFlags  uint32
	// ServerSide is set if either the deprecated MPTCP_ATTR_SERVER_SIDE
	// attribute or EventFlagServerSide says so.
	ServerSide bool
}

func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s token=%#x", e.Type, e.Token)
	if e.Saddr.IsValid() || e.Sport != 0 {
		fmt.Fprintf(&b, " src=%s", netip.AddrPortFrom(e.Saddr, e.Sport))
	}
	if e.Daddr.IsValid() || e.Dport != 0 {
		fmt.Fprintf(&b, " dst=%s", netip.AddrPortFrom(e.Daddr, e.Dport))
	}
	fmt.Fprintf(&b, " loc_id=%d rem_id=%d", e.LocalID, e.RemoteID)
	if e.Backup {
		b.WriteString(" backup")
	}
	if e.ServerSide {
		b.WriteString(" server_side")
	}
	if e.IfIndex != 0 {
		fmt.Fprintf(&b, " ifindex=%d", e.IfIndex)
	}
	if e.Flags != 0 {
		fmt.Fprintf(&b, " flags=%#x", uint16(e.Flags))
	}
	if e.Error != 0 {
		fmt.Fprintf(&b, " error=%d", e.Error)
	}
	if e.ResetReason != 0 || e.ResetFlags != 0 {
		fmt.Fprintf(&b, " reset_reason=%d reset_flags=%#x", e.ResetReason, e.ResetFlags)
	}
	if e.Timeout != 0 {
		fmt.Fprintf(&b, " timeout=%d", e.Timeout)
	}
	return b.String()
}

// DecodeEvent decodes the attributes of one event message whose generic
// netlink command is cmd. Unknown event types and unknown attributes are
// kept/skipped so newer kernels do not break decoding; a known attribute
// with the wrong size, or broken attribute framing, is an error.
func DecodeEvent(cmd uint8, attrs []byte) (Event, error) {
	e := Event{Type: EventType(cmd)}
	ad, err := netlink.NewAttributeDecoder(attrs)
	if err != nil {
		return Event{}, fmt.Errorf("decode %s event: %w", e.Type, err)
	}
	for ad.Next() {
		var err error
		switch ad.Type() {
		case evAttrToken:
			e.Token = ad.Uint32()
		case evAttrFamily:
			e.Family = ad.Uint16()
		case evAttrLocID:
			e.LocalID = ad.Uint8()
		case evAttrRemID:
			e.RemoteID = ad.Uint8()
		case evAttrSaddr4:
			e.Saddr, err = addr4(ad.Bytes())
		case evAttrSaddr6:
			e.Saddr, err = addr16(ad.Bytes())
		case evAttrDaddr4:
			e.Daddr, err = addr4(ad.Bytes())
		case evAttrDaddr6:
			e.Daddr, err = addr16(ad.Bytes())
		case evAttrSport:
			e.Sport, err = be16(ad.Bytes())
		case evAttrDport:
			e.Dport, err = be16(ad.Bytes())
		case evAttrBackup:
			e.Backup = ad.Uint8() != 0
		case evAttrError:
			e.Error = int(ad.Uint8())
		case evAttrFlags:
			e.Flags = EventFlags(ad.Uint16())
		case evAttrTimeout:
			e.Timeout = ad.Uint32()
		case evAttrIfIdx:
			e.IfIndex = int(ad.Int32())
		case evAttrResetReason:
			e.ResetReason = ad.Uint32()
		case evAttrResetFlags:
			e.ResetFlags = ad.Uint32()
		case evAttrServerSide:
			e.ServerSide = e.ServerSide || ad.Uint8() != 0
		}
		if err != nil {
			return Event{}, fmt.Errorf("decode %s event: %w", e.Type, err)
		}
	}
	if err := ad.Err(); err != nil {
		return Event{}, fmt.Errorf("decode %s event: %w", e.Type, err)
	}
	if e.Flags&EventFlagServerSide != 0 {
		e.ServerSide = true
	}
	return e, nil
}

func be16(b []byte) (uint16, error) {
	if len(b) != 2 {
		return 0, fmt.Errorf("port attribute has %d bytes, want 2", len(b))
	}
	return binary.BigEndian.Uint16(b), nil
}
