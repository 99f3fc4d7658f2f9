// SPDX-License-Identifier: Apache-2.0

package mptcpnl

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// EndpointFlags are the MPTCP_PM_ADDR_FLAG_* bits of an endpoint.
type EndpointFlags uint32

// Endpoint flags: MPTCP_PM_ADDR_FLAG_* #defines in include/uapi/linux/mptcp.h
// (not enums, so not in BTF). Signal..Implicit are in the 6.1 header; Laminar
// was added in 6.18 (upstream header, and verified on this kernel by the
// integration test, which reads it back from an endpoint dump). Kernels with
// "mptcp: pm: ignore unknown endpoint flags" drop bits they do not know, so a
// dump shows which flags the running kernel supports.
const (
	FlagSignal   EndpointFlags = 1 << 0 // announce the address to peers (ADD_ADDR)
	FlagSubflow  EndpointFlags = 1 << 1 // create subflows from this address
	FlagBackup   EndpointFlags = 1 << 2 // subflows using it are backup subflows
	FlagFullmesh EndpointFlags = 1 << 3 // subflows to every announced peer address
	FlagImplicit EndpointFlags = 1 << 4 // created by the kernel, not by the user
	FlagLaminar  EndpointFlags = 1 << 5 // 6.18+: subflows to announced addresses of the same family
)

var endpointFlagNames = []struct {
	flag EndpointFlags
	name string
}{
	{FlagSignal, "signal"},
	{FlagSubflow, "subflow"},
	{FlagBackup, "backup"},
	{FlagFullmesh, "fullmesh"},
	{FlagImplicit, "implicit"},
	{FlagLaminar, "laminar"},
}

// String lists the flags by their iproute2 names, e.g. "subflow,backup".
// Unknown bits are shown in hex so nothing is hidden.
func (f EndpointFlags) String() string {
	var parts []string
	rest := f
	for _, n := range endpointFlagNames {
		if f&n.flag != 0 {
			parts = append(parts, n.name)
			rest &^= n.flag
		}
	}
	if rest != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint32(rest)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// Endpoint is one entry of the in-kernel path manager's address list, what
// `ip mptcp endpoint` shows.
type Endpoint struct {
	// ID identifies the endpoint. When adding, 0 lets the kernel pick one.
	ID uint8
	// Addr is the local address; required when adding.
	Addr netip.Addr
	// Port is announced with signal endpoints; 0 means none.
	Port  uint16
	Flags EndpointFlags
	// IfIndex binds subflows created from this endpoint to an interface;
	// 0 means unbound.
	IfIndex int
}

func (e Endpoint) String() string {
	s := fmt.Sprintf("id %d %s", e.ID, e.Addr)
	if e.Port != 0 {
		s += fmt.Sprintf(" port %d", e.Port)
	}
	s += " " + e.Flags.String()
	if e.IfIndex != 0 {
		s += fmt.Sprintf(" ifindex %d", e.IfIndex)
	}
	return s
}

// Limits are the per-namespace limits of the in-kernel path manager, what
// `ip mptcp limits` shows.
type Limits struct {
	// Subflows is the maximum number of additional subflows per connection.
	Subflows uint32
	// AddAddrAccepted is the maximum number of ADD_ADDR announcements
	// accepted per connection (MPTCP_PM_ATTR_RCV_ADD_ADDRS).
	AddAddrAccepted uint32
}

// encodeEndpoint returns the request attributes for ADD_ADDR: the endpoint
// nested in MPTCP_PM_ATTR_ADDR. The kernel requires family and address.
func encodeEndpoint(e Endpoint) ([]byte, error) {
	if !e.Addr.IsValid() {
		return nil, errors.New("endpoint needs an address")
	}
	ae := netlink.NewAttributeEncoder()
	ae.Nested(attrAddr, func(nae *netlink.AttributeEncoder) error {
		if e.Addr.Is4() {
			nae.Uint16(addrAttrFamily, unix.AF_INET)
			a := e.Addr.As4()
			nae.Bytes(addrAttrAddr4, a[:])
		} else {
			nae.Uint16(addrAttrFamily, unix.AF_INET6)
			a := e.Addr.As16()
			nae.Bytes(addrAttrAddr6, a[:])
		}
		// Zero values mean "not set" for the kernel too, so leave them
		// out rather than sending explicit zeros.
		if e.ID != 0 {
			nae.Uint8(addrAttrID, e.ID)
		}
		if e.Port != 0 {
			nae.Uint16(addrAttrPort, e.Port)
		}
		if e.Flags != 0 {
			nae.Uint32(addrAttrFlags, uint32(e.Flags))
		}
		if e.IfIndex != 0 {
			nae.Int32(addrAttrIfIdx, int32(e.IfIndex))
		}
		return nil
	})
	return ae.Encode()
}

// encodeEndpointID returns request attributes that name an endpoint by ID
// only, as DEL_ADDR and GET_ADDR accept, optionally with new flags for
// SET_FLAGS.
func encodeEndpointID(id uint8, flags *EndpointFlags) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(attrAddr, func(nae *netlink.AttributeEncoder) error {
		nae.Uint8(addrAttrID, id)
		if flags != nil {
			nae.Uint32(addrAttrFlags, uint32(*flags))
		}
		return nil
	})
	return ae.Encode()
}

// decodeEndpointMessage decodes the attributes of one GET_ADDR reply: an
// endpoint nested in MPTCP_PM_ATTR_ADDR. Unknown attributes are skipped.
func decodeEndpointMessage(b []byte) (Endpoint, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return Endpoint{}, err
	}
	var e Endpoint
	found := false
	for ad.Next() {
		if ad.Type() != attrAddr {
			continue
		}
		found = true
		ad.Nested(func(nad *netlink.AttributeDecoder) error {
			var err error
			e, err = decodeEndpoint(nad)
			return err
		})
	}
	if err := ad.Err(); err != nil {
		return Endpoint{}, err
	}
	if !found {
		return Endpoint{}, errors.New("reply without MPTCP_PM_ATTR_ADDR")
	}
	return e, nil
}

func decodeEndpoint(ad *netlink.AttributeDecoder) (Endpoint, error) {
	var e Endpoint
	var family uint16
	for ad.Next() {
		switch ad.Type() {
		case addrAttrFamily:
			family = ad.Uint16()
		case addrAttrID:
			e.ID = ad.Uint8()
		case addrAttrAddr4:
			a, err := addr4(ad.Bytes())
			if err != nil {
				return Endpoint{}, err
			}
			e.Addr = a
		case addrAttrAddr6:
			a, err := addr16(ad.Bytes())
			if err != nil {
				return Endpoint{}, err
			}
			e.Addr = a
		case addrAttrPort:
			e.Port = ad.Uint16()
		case addrAttrFlags:
			e.Flags = EndpointFlags(ad.Uint32())
		case addrAttrIfIdx:
			e.IfIndex = int(ad.Int32())
		}
	}
	if err := ad.Err(); err != nil {
		return Endpoint{}, err
	}
	// The kernel always sends the family together with the matching
	// address; a mismatch means we would misreport the endpoint.
	if e.Addr.IsValid() && family != 0 && family != addrFamily(e.Addr) {
		return Endpoint{}, fmt.Errorf("endpoint family %d does not match address %s", family, e.Addr)
	}
	return e, nil
}

func encodeLimits(l Limits) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrRcvAddAddrs, l.AddAddrAccepted)
	ae.Uint32(attrSubflows, l.Subflows)
	return ae.Encode()
}

func decodeLimits(b []byte) (Limits, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return Limits{}, err
	}
	var l Limits
	var haveSubflows, haveAccepted bool
	for ad.Next() {
		switch ad.Type() {
		case attrRcvAddAddrs:
			l.AddAddrAccepted = ad.Uint32()
			haveAccepted = true
		case attrSubflows:
			l.Subflows = ad.Uint32()
			haveSubflows = true
		}
	}
	if err := ad.Err(); err != nil {
		return Limits{}, err
	}
	// The kernel always sends both; a reply without them is not a limits
	// reply and must not be mistaken for "limits are zero".
	if !haveSubflows || !haveAccepted {
		return Limits{}, errors.New("limits reply lacks MPTCP_PM_ATTR_SUBFLOWS or MPTCP_PM_ATTR_RCV_ADD_ADDRS")
	}
	return l, nil
}

func addrFamily(a netip.Addr) uint16 {
	if a.Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

func addr4(b []byte) (netip.Addr, error) {
	if len(b) != 4 {
		return netip.Addr{}, fmt.Errorf("IPv4 address attribute has %d bytes, want 4", len(b))
	}
	return netip.AddrFrom4([4]byte(b)), nil
}

func addr16(b []byte) (netip.Addr, error) {
	if len(b) != 16 {
		return netip.Addr{}, fmt.Errorf("IPv6 address attribute has %d bytes, want 16", len(b))
	}
	return netip.AddrFrom16([16]byte(b)), nil
}
