// SPDX-License-Identifier: Apache-2.0

package mptcpnl

// Pure encode/decode tests; no kernel needed. Fixtures are built with
// netlink.AttributeEncoder (native byte order, like the kernel) and by hand
// for the network-byte-order fields.

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nlenc"
	"golang.org/x/sys/unix"
)

// attrs encodes a fixture; fn adds the attributes.
func attrs(t testing.TB, fn func(ae *netlink.AttributeEncoder)) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	fn(ae)
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func port(p uint16) []byte { return binary.BigEndian.AppendUint16(nil, p) }

func ip(s string) []byte { return netip.MustParseAddr(s).AsSlice() }

// decodeEventCases are well-formed event messages and what they decode to;
// FuzzDecodeEvent starts from them too.
var decodeEventCases = []struct {
	name string
	cmd  uint8
	data func(ae *netlink.AttributeEncoder)
	want Event
}{{
	name: "created IPv4 server side (deprecated attribute only)",
	cmd:  1,
	data: func(ae *netlink.AttributeEncoder) {
		ae.Uint32(evAttrToken, 0xdeadbeef)
		ae.Uint16(evAttrFamily, unix.AF_INET)
		ae.Bytes(evAttrSaddr4, ip("192.0.2.1"))
		ae.Bytes(evAttrDaddr4, ip("192.0.2.2"))
		ae.Bytes(evAttrSport, port(443))
		ae.Bytes(evAttrDport, port(50000))
		ae.Uint8(evAttrServerSide, 1)
	},
	want: Event{Type: EventCreated, Token: 0xdeadbeef, Family: unix.AF_INET,
		Saddr: netip.MustParseAddr("192.0.2.1"), Daddr: netip.MustParseAddr("192.0.2.2"),
		Sport: 443, Dport: 50000, ServerSide: true},
}, {
	name: "established server side by flag only (6.18 style)",
	cmd:  2,
	data: func(ae *netlink.AttributeEncoder) {
		ae.Uint32(evAttrToken, 1)
		ae.Uint16(evAttrFlags, uint16(EventFlagServerSide|EventFlagDenyJoinID0))
	},
	want: Event{Type: EventEstablished, Token: 1, Flags: EventFlagServerSide | EventFlagDenyJoinID0, ServerSide: true},
}, {
	name: "sub established IPv6 with every subflow attribute",
	cmd:  10,
	data: func(ae *netlink.AttributeEncoder) {
		ae.Uint32(evAttrToken, 7)
		ae.Uint16(evAttrFamily, unix.AF_INET6)
		ae.Uint8(evAttrLocID, 3)
		ae.Uint8(evAttrRemID, 4)
		ae.Bytes(evAttrSaddr6, ip("2001:db8::1"))
		ae.Bytes(evAttrDaddr6, ip("2001:db8::2"))
		ae.Bytes(evAttrSport, port(0x1234))
		ae.Bytes(evAttrDport, port(0xfedc))
		ae.Uint8(evAttrBackup, 1)
		ae.Int32(evAttrIfIdx, 12)
		ae.Uint8(evAttrError, uint8(unix.ECONNRESET))
	},
	want: Event{Type: EventSubEstablished, Token: 7, Family: unix.AF_INET6, LocalID: 3, RemoteID: 4,
		Saddr: netip.MustParseAddr("2001:db8::1"), Daddr: netip.MustParseAddr("2001:db8::2"),
		Sport: 0x1234, Dport: 0xfedc, Backup: true, IfIndex: 12, Error: int(unix.ECONNRESET)},
}, {
	name: "sub closed with reset reason",
	cmd:  11,
	data: func(ae *netlink.AttributeEncoder) {
		ae.Uint32(evAttrToken, 9)
		ae.Uint32(evAttrResetReason, 5)
		ae.Uint32(evAttrResetFlags, 1)
		ae.Uint32(evAttrTimeout, 30)
	},
	want: Event{Type: EventSubClosed, Token: 9, ResetReason: 5, ResetFlags: 1, Timeout: 30},
}, {
	name: "announced with port",
	cmd:  6,
	data: func(ae *netlink.AttributeEncoder) {
		ae.Uint32(evAttrToken, 2)
		ae.Uint8(evAttrRemID, 5)
		ae.Uint16(evAttrFamily, unix.AF_INET)
		ae.Bytes(evAttrDaddr4, ip("198.51.100.7"))
		ae.Bytes(evAttrDport, port(8080))
	},
	want: Event{Type: EventAnnounced, Token: 2, RemoteID: 5, Family: unix.AF_INET,
		Daddr: netip.MustParseAddr("198.51.100.7"), Dport: 8080},
}, {
	name: "unknown attributes are skipped, also with the nested flag",
	cmd:  7,
	data: func(ae *netlink.AttributeEncoder) {
		ae.Bytes(200, []byte{1, 2, 3}) // odd length: padding must be handled
		ae.Uint32(evAttrToken, 3)
		ae.Nested(201, func(nae *netlink.AttributeEncoder) error {
			nae.Uint64(1, 42)
			return nil
		})
		ae.Uint8(evAttrRemID, 6)
	},
	want: Event{Type: EventRemoved, Token: 3, RemoteID: 6},
}, {
	name: "unknown event type is kept",
	cmd:  42,
	data: func(ae *netlink.AttributeEncoder) { ae.Uint32(evAttrToken, 4) },
	want: Event{Type: 42, Token: 4},
}, {
	name: "no attributes",
	cmd:  3,
	data: func(ae *netlink.AttributeEncoder) {},
	want: Event{Type: EventClosed},
}}

func TestDecodeEvent(t *testing.T) {
	tests := decodeEventCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeEvent(tt.cmd, attrs(t, tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestDecodeEventErrors(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"token too short", attrs(t, func(ae *netlink.AttributeEncoder) { ae.Uint16(evAttrToken, 1) })},
		{"IPv4 address of 16 bytes", attrs(t, func(ae *netlink.AttributeEncoder) { ae.Bytes(evAttrSaddr4, ip("2001:db8::1")) })},
		{"IPv6 address of 4 bytes", attrs(t, func(ae *netlink.AttributeEncoder) { ae.Bytes(evAttrDaddr6, ip("192.0.2.1")) })},
		{"port of 4 bytes", attrs(t, func(ae *netlink.AttributeEncoder) { ae.Uint32(evAttrSport, 80) })},
		{"flags as u32", attrs(t, func(ae *netlink.AttributeEncoder) { ae.Uint32(evAttrFlags, 2) })},
		{"truncated header", []byte{8, 0, 1}},
		{"length beyond buffer", []byte{12, 0, 1, 0, 1, 2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if e, err := DecodeEvent(uint8(EventCreated), tt.data); err == nil {
				t.Errorf("decoded %v, want error", e)
			}
		})
	}
}

// TestDecodeEventKernelCapture decodes a SUB_ESTABLISHED message captured from
// Linux 6.18 (client side of TestKernelEvents, subflow bound to ifindex 3),
// the ground truth for byte orders. The capture is little-endian.
func TestDecodeEventKernelCapture(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("capture is from a little-endian machine")
	}
	b, err := hex.DecodeString("08000100f0ea59490600020002000000080005000a000201080007000a00010206000900ddb1000006000a00aed100000500030007000000050004000000000005000b000000000008000f0003000000")
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEvent(uint8(EventSubEstablished), b)
	if err != nil {
		t.Fatal(err)
	}
	want := Event{Type: EventSubEstablished, Token: 0x4959eaf0, Family: unix.AF_INET, LocalID: 7, RemoteID: 0,
		Saddr: netip.MustParseAddr("10.0.2.1"), Daddr: netip.MustParseAddr("10.0.1.2"),
		Sport: 56753, Dport: 44753, IfIndex: 3}
	if got != want {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func TestEventTypeString(t *testing.T) {
	for typ, want := range map[EventType]string{
		EventCreated: "CREATED", EventSubEstablished: "SUB_ESTABLISHED",
		EventListenerClosed: "LISTENER_CLOSED", 4: "EventType(4)", 255: "EventType(255)",
	} {
		if got := typ.String(); got != want {
			t.Errorf("EventType(%d).String() = %q, want %q", uint8(typ), got, want)
		}
	}
}

func TestEndpointFlagsString(t *testing.T) {
	for f, want := range map[EndpointFlags]string{
		0:                           "none",
		FlagSubflow | FlagBackup:    "subflow,backup",
		FlagSignal | FlagLaminar:    "signal,laminar",
		FlagFullmesh | 1<<9 | 1<<10: "fullmesh,0x600",
	} {
		if got := f.String(); got != want {
			t.Errorf("EndpointFlags(%#x).String() = %q, want %q", uint32(f), got, want)
		}
	}
}

// nested builds the MPTCP_PM_ATTR_ADDR attribute by hand, without the
// encoder, as an independent reference for encodeEndpoint.
func nested(t *testing.T, inner []netlink.Attribute) []byte {
	t.Helper()
	in, err := netlink.MarshalAttributes(inner)
	if err != nil {
		t.Fatal(err)
	}
	b, err := netlink.MarshalAttributes([]netlink.Attribute{{Type: netlink.Nested | attrAddr, Data: in}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncodeEndpoint(t *testing.T) {
	tests := []struct {
		name string
		e    Endpoint
		want []netlink.Attribute
	}{{
		name: "IPv4, kernel picks the ID, zero fields omitted",
		e:    Endpoint{Addr: netip.MustParseAddr("10.0.0.1"), Flags: FlagSignal},
		want: []netlink.Attribute{
			{Type: addrAttrFamily, Data: nlenc.Uint16Bytes(unix.AF_INET)},
			{Type: addrAttrAddr4, Data: []byte{10, 0, 0, 1}},
			{Type: addrAttrFlags, Data: nlenc.Uint32Bytes(uint32(FlagSignal))},
		},
	}, {
		name: "IPv6 with everything (port in host order)",
		e: Endpoint{ID: 9, Addr: netip.MustParseAddr("2001:db8::5"), Port: 0x1234,
			Flags: FlagSubflow | FlagBackup, IfIndex: 4},
		want: []netlink.Attribute{
			{Type: addrAttrFamily, Data: nlenc.Uint16Bytes(unix.AF_INET6)},
			{Type: addrAttrAddr6, Data: ip("2001:db8::5")},
			{Type: addrAttrID, Data: []byte{9}},
			{Type: addrAttrPort, Data: nlenc.Uint16Bytes(0x1234)},
			{Type: addrAttrFlags, Data: nlenc.Uint32Bytes(uint32(FlagSubflow | FlagBackup))},
			{Type: addrAttrIfIdx, Data: nlenc.Int32Bytes(4)},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := encodeEndpoint(tt.e)
			if err != nil {
				t.Fatal(err)
			}
			if want := nested(t, tt.want); !reflect.DeepEqual(got, want) {
				t.Errorf("got  %x\nwant %x", got, want)
			}
			// What we send must read back unchanged (dump replies use
			// the same layout).
			back, err := decodeEndpointMessage(got)
			if err != nil {
				t.Fatal(err)
			}
			if back != tt.e {
				t.Errorf("round trip: got %v, want %v", back, tt.e)
			}
		})
	}

	if _, err := encodeEndpoint(Endpoint{ID: 1}); err == nil {
		t.Error("encoding an endpoint without address succeeded")
	}
}

func TestEncodeEndpointID(t *testing.T) {
	got, err := encodeEndpointID(42, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := nested(t, []netlink.Attribute{{Type: addrAttrID, Data: []byte{42}}}); !reflect.DeepEqual(got, want) {
		t.Errorf("ID only: got %x, want %x", got, want)
	}
	flags := FlagBackup
	got, err = encodeEndpointID(42, &flags)
	if err != nil {
		t.Fatal(err)
	}
	want := nested(t, []netlink.Attribute{
		{Type: addrAttrID, Data: []byte{42}},
		{Type: addrAttrFlags, Data: nlenc.Uint32Bytes(uint32(FlagBackup))},
	})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ID and flags: got %x, want %x", got, want)
	}
}

func TestDecodeEndpointMessage(t *testing.T) {
	// A dump reply as the kernel builds it: family, id, flags, if_idx, then
	// the address, plus an attribute this package does not know.
	good := attrs(t, func(ae *netlink.AttributeEncoder) {
		ae.Nested(attrAddr, func(nae *netlink.AttributeEncoder) error {
			nae.Uint16(addrAttrFamily, unix.AF_INET)
			nae.Uint8(addrAttrID, 3)
			nae.Uint32(addrAttrFlags, uint32(FlagSubflow|FlagFullmesh|1<<20))
			nae.Int32(addrAttrIfIdx, 2)
			nae.Bytes(addrAttrAddr4, ip("10.1.2.3"))
			nae.Uint32(99, 7)
			return nil
		})
	})
	got, err := decodeEndpointMessage(good)
	if err != nil {
		t.Fatal(err)
	}
	want := Endpoint{ID: 3, Addr: netip.MustParseAddr("10.1.2.3"), Flags: FlagSubflow | FlagFullmesh | 1<<20, IfIndex: 2}
	if got != want {
		t.Errorf("got %v, want %v", got, want)
	}

	bad := map[string][]byte{
		"no address attribute": attrs(t, func(ae *netlink.AttributeEncoder) { ae.Uint32(attrSubflows, 1) }),
		"family mismatch": attrs(t, func(ae *netlink.AttributeEncoder) {
			ae.Nested(attrAddr, func(nae *netlink.AttributeEncoder) error {
				nae.Uint16(addrAttrFamily, unix.AF_INET6)
				nae.Bytes(addrAttrAddr4, ip("10.1.2.3"))
				return nil
			})
		}),
		"short IPv6 address": attrs(t, func(ae *netlink.AttributeEncoder) {
			ae.Nested(attrAddr, func(nae *netlink.AttributeEncoder) error {
				nae.Bytes(addrAttrAddr6, []byte{1, 2, 3})
				return nil
			})
		}),
		"id as u16": attrs(t, func(ae *netlink.AttributeEncoder) {
			ae.Nested(attrAddr, func(nae *netlink.AttributeEncoder) error {
				nae.Uint16(addrAttrID, 3)
				return nil
			})
		}),
	}
	for name, b := range bad {
		if e, err := decodeEndpointMessage(b); err == nil {
			t.Errorf("%s: decoded %v, want error", name, e)
		}
	}
}

func TestLimitsCodec(t *testing.T) {
	l := Limits{Subflows: 3, AddAddrAccepted: 5}
	b, err := encodeLimits(l)
	if err != nil {
		t.Fatal(err)
	}
	want, err := netlink.MarshalAttributes([]netlink.Attribute{
		{Type: attrRcvAddAddrs, Data: nlenc.Uint32Bytes(5)},
		{Type: attrSubflows, Data: nlenc.Uint32Bytes(3)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("encode: got %x, want %x", b, want)
	}
	if got, err := decodeLimits(b); err != nil || got != l {
		t.Errorf("decode: got %+v, %v; want %+v", got, err, l)
	}

	onlyOne := attrs(t, func(ae *netlink.AttributeEncoder) { ae.Uint32(attrSubflows, 2) })
	if got, err := decodeLimits(onlyOne); err == nil {
		t.Errorf("decoding limits without RCV_ADD_ADDRS gave %+v, want error", got)
	}
}

func TestEventString(t *testing.T) {
	e := Event{Type: EventSubEstablished, Token: 0x10, Saddr: netip.MustParseAddr("10.0.0.1"), Sport: 1,
		Daddr: netip.MustParseAddr("10.0.0.2"), Dport: 2, LocalID: 3, RemoteID: 4, IfIndex: 5}
	got := e.String()
	for _, part := range []string{"SUB_ESTABLISHED", "token=0x10", "src=10.0.0.1:1", "dst=10.0.0.2:2", "loc_id=3", "rem_id=4", "ifindex=5"} {
		if !strings.Contains(got, part) {
			t.Errorf("%q lacks %q", got, part)
		}
	}
}

// Closing a subflow names it exactly: both ends with their ports. A
// request without them is refused before it reaches the kernel (where
// SUBFLOW_DESTROY would fail with a bare EINVAL).
func TestDestroySubflowNeedsBothEnds(t *testing.T) {
	var c Conn
	local := netip.MustParseAddrPort("10.0.0.1:40000")
	remote := netip.MustParseAddrPort("10.1.0.1:80")
	for _, tc := range []struct{ local, remote netip.AddrPort }{
		{netip.AddrPortFrom(local.Addr(), 0), remote},
		{local, netip.AddrPortFrom(remote.Addr(), 0)},
		{netip.AddrPort{}, remote},
	} {
		err := c.DestroySubflow(1, tc.local, tc.remote)
		if err == nil || !strings.Contains(err.Error(), "ports") {
			t.Errorf("DestroySubflow(%v, %v): %v, want an error naming the missing ports", tc.local, tc.remote, err)
		}
	}
}
