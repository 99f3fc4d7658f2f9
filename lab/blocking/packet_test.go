// SPDX-License-Identifier: Apache-2.0

package blocking

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"reflect"
	"testing"
)

// seg builds an IPv4/TCP packet: addresses "a.b.c.d:port", TCP flags
// (FIN 1, SYN 2, RST 4, ACK 16), options padded to 4 bytes with NOPs, and
// a payload of n zero bytes of which only capture are included (the IP
// total length still says n).
type seg struct {
	src, dst string
	seq      uint32
	flags    byte
	window   uint16
	opts     [][]byte
	n        int
	capture  int
}

const (
	fSYN = 2
	fACK = 16
	fFIN = 1
)

func (s seg) bytes() []byte {
	var opts []byte
	for _, o := range s.opts {
		opts = append(opts, o...)
	}
	for len(opts)%4 != 0 {
		opts = append([]byte{optNOP}, opts...)
	}
	src, dst := netip.MustParseAddrPort(s.src), netip.MustParseAddrPort(s.dst)
	tcpLen := 20 + len(opts)
	b := make([]byte, 20+tcpLen+s.capture)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(20+tcpLen+s.n))
	b[8], b[9] = 64, 6
	copy(b[12:16], src.Addr().AsSlice())
	copy(b[16:20], dst.Addr().AsSlice())
	t := b[20:]
	binary.BigEndian.PutUint16(t[0:], src.Port())
	binary.BigEndian.PutUint16(t[2:], dst.Port())
	binary.BigEndian.PutUint32(t[4:], s.seq)
	t[12] = byte(tcpLen/4) << 4
	t[13] = s.flags
	binary.BigEndian.PutUint16(t[14:], s.window)
	copy(t[20:], opts)
	return b
}

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

func opt(kind byte, body ...[]byte) []byte {
	o := []byte{kind, 0}
	for _, b := range body {
		o = append(o, b...)
	}
	o[1] = byte(len(o))
	return o
}

// MPTCP options, RFC 8684 section 3.
func mpcSYN() []byte { return opt(optMPTCP, []byte{0x01, 0x81}) }
func mpcSYNACK(key uint64) []byte {
	return opt(optMPTCP, []byte{0x01, 0x81}, be64(key))
}
func mpcACK(sender, peer uint64) []byte {
	return opt(optMPTCP, []byte{0x01, 0x81}, be64(sender), be64(peer))
}
func mpcData(sender, peer uint64, n uint16) []byte {
	return opt(optMPTCP, []byte{0x01, 0x81}, be64(sender), be64(peer), be16(n))
}
func joinSYN(token uint32) []byte {
	return opt(optMPTCP, []byte{0x10, 0x02}, be32(token), be32(0xdeadbeef))
}

// dss64 is Linux's usual DSS: an 8-byte data ACK and an 8-byte DSN.
func dss64(dsn uint64, ssn uint32, n uint16, fin bool) []byte {
	f := byte(dssAckPresent | dssAck64 | dssMapPresent | dssDSN64)
	if fin {
		f |= dssDataFIN
	}
	return opt(optMPTCP, []byte{0x20, f}, be64(7), be64(dsn), be32(ssn), be16(n))
}

// dss32 has a 4-byte data ACK, a 4-byte DSN and a checksum.
func dss32(dsn uint32, ssn uint32, n uint16) []byte {
	f := byte(dssAckPresent | dssMapPresent)
	return opt(optMPTCP, []byte{0x20, f}, be32(7), be32(dsn), be32(ssn), be16(n), be16(0xabcd))
}

func dssAckOnly() []byte {
	return opt(optMPTCP, []byte{0x20, dssAckPresent | dssAck64}, be64(99))
}

func mustParse(t *testing.T, s seg) Packet {
	t.Helper()
	p, err := ParsePacket(s.bytes())
	if err != nil {
		t.Fatalf("%+v: %v", s, err)
	}
	return p
}

// The payload a capture kept is the packet's, from the TCP options' end to
// the IP total length or the capture's end, whichever comes first.
func TestParsePayload(t *testing.T) {
	s := seg{src: "10.0.0.1:1", dst: "10.1.0.1:2", flags: fACK, opts: [][]byte{dss64(9, 1, 100, false)}, n: 100, capture: 100}
	b := s.bytes()
	body := b[len(b)-100:]
	for i := range body {
		body[i] = byte(i)
	}
	p, err := ParsePacket(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.Payload, body) || p.PayloadLen != 100 {
		t.Fatalf("payload %v (len %d), want 0..99", p.Payload, p.PayloadLen)
	}
	// Cut by the capture: what was kept, the length from the IP header.
	p, err = ParsePacket(b[:len(b)-60])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.Payload, body[:40]) || p.PayloadLen != 100 {
		t.Fatalf("cut payload %v (len %d), want 0..39 of 100", p.Payload, p.PayloadLen)
	}
	// Ethernet padding past the IP total length is not payload.
	p, err = ParsePacket(append(bytes.Clone(b), 0, 0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Payload) != 100 {
		t.Fatalf("padded packet: payload of %d bytes, want 100", len(p.Payload))
	}
}

func TestParseDSS(t *testing.T) {
	p := mustParse(t, seg{src: "10.0.0.1:40000", dst: "10.1.0.1:5201", seq: 1234, flags: fACK, window: 500,
		opts: [][]byte{{8, 10, 0, 0, 0, 1, 0, 0, 0, 2}, dss64(1<<40+5, 77, 1448, false)}, n: 1448, capture: 0})
	want := Packet{
		Src: netip.MustParseAddrPort("10.0.0.1:40000"), Dst: netip.MustParseAddrPort("10.1.0.1:5201"),
		Seq: 1234, PayloadLen: 1448, ACK: true, Window: 500, WScale: -1,
		Map: true, DSN: 1<<40 + 5, DSN64: true, SSN: 77, DataLen: 1448,
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", p, want)
	}

	p = mustParse(t, seg{src: "10.0.1.1:1", dst: "10.1.0.1:2", flags: fACK, opts: [][]byte{dss32(0xfffffff0, 3, 100)}, n: 100})
	if !p.Map || p.DSN64 || p.DSN != 0xfffffff0 || p.SSN != 3 || p.DataLen != 100 || !p.Checksum {
		t.Fatalf("32-bit DSN with checksum: %+v", p)
	}

	p = mustParse(t, seg{src: "10.0.1.1:1", dst: "10.1.0.1:2", flags: fACK | fFIN, opts: [][]byte{dss64(9, 1, 1, true)}})
	if !p.Map || !p.DataFIN || p.DataLen != 1 || !p.FIN || p.PayloadLen != 0 {
		t.Fatalf("DATA_FIN: %+v", p)
	}

	p = mustParse(t, seg{src: "10.0.1.1:1", dst: "10.1.0.1:2", flags: fACK, opts: [][]byte{dssAckOnly()}})
	if p.Map {
		t.Fatalf("a data ACK alone is no mapping: %+v", p)
	}
}

func TestParseHandshake(t *testing.T) {
	p := mustParse(t, seg{src: "10.0.0.1:1", dst: "10.1.0.1:2", seq: 99, flags: fSYN, opts: [][]byte{mpcSYN(), {optWScale, 3, 7}}})
	if !p.SYN || p.ACK || !p.MPC || p.MPCKeys != 0 || p.WScale != 7 || p.Seq != 99 {
		t.Fatalf("MP_CAPABLE SYN: %+v", p)
	}
	p = mustParse(t, seg{src: "10.1.0.1:2", dst: "10.0.0.1:1", flags: fSYN | fACK, opts: [][]byte{mpcSYNACK(5)}})
	if !p.MPC || p.MPCKeys != 1 || p.SenderKey != 5 {
		t.Fatalf("MP_CAPABLE SYN/ACK: %+v", p)
	}
	p = mustParse(t, seg{src: "10.0.0.1:1", dst: "10.1.0.1:2", flags: fACK, opts: [][]byte{mpcACK(1, 2)}})
	if p.MPCKeys != 2 || p.SenderKey != 1 || p.PeerKey != 2 || p.MPCDataLen != 0 {
		t.Fatalf("MP_CAPABLE ACK: %+v", p)
	}
	p = mustParse(t, seg{src: "10.0.0.1:1", dst: "10.1.0.1:2", flags: fACK, opts: [][]byte{mpcData(1, 2, 300)}, n: 300})
	if p.MPCKeys != 2 || p.MPCDataLen != 300 || p.PayloadLen != 300 {
		t.Fatalf("MP_CAPABLE with data: %+v", p)
	}
	p = mustParse(t, seg{src: "10.0.1.1:1", dst: "10.1.0.1:2", flags: fSYN, opts: [][]byte{joinSYN(0x11223344)}})
	if !p.Join || p.JoinToken != 0x11223344 {
		t.Fatalf("MP_JOIN SYN: %+v", p)
	}
}

func TestParseRejects(t *testing.T) {
	good := seg{src: "10.0.0.1:1", dst: "10.1.0.1:2", flags: fACK, opts: [][]byte{dss64(1, 1, 10, false)}, n: 10}.bytes()

	udp := append([]byte(nil), good...)
	udp[9] = 17
	frag := append([]byte(nil), good...)
	frag[6] = 0x20 // more fragments
	v6 := append([]byte(nil), good...)
	v6[0] = 0x60
	for name, b := range map[string][]byte{"UDP": udp, "fragment": frag, "IPv6": v6, "short": good[:30]} {
		if _, err := ParsePacket(b); !errors.Is(err, ErrNotTCP) {
			t.Errorf("%s: %v, want ErrNotTCP", name, err)
		}
	}

	overrun := append([]byte(nil), good...)
	overrun[20+20+1] = 40 // the DSS option's length past the header
	if _, err := ParsePacket(overrun); err == nil || errors.Is(err, ErrNotTCP) {
		t.Errorf("an option overrunning the header: %v", err)
	}
	badDSS := seg{src: "10.0.0.1:1", dst: "10.1.0.1:2", flags: fACK, opts: [][]byte{opt(optMPTCP, []byte{0x20, dssMapPresent}, be32(1))}}
	if _, err := ParsePacket(badDSS.bytes()); err == nil {
		t.Error("a DSS too short for its flags parsed")
	}
}

// The token and IDSN of a key, against SHA-256 computed elsewhere
// (python3 hashlib over the key's 8 bytes in network order).
func TestKeyHash(t *testing.T) {
	for _, c := range []struct {
		key   uint64
		token uint32
		idsn  uint64
	}{
		{0x0123456789abcdef, 0x55c53f5d, 0x570762cd38be9818},
		{0xfedcba9876543210, 0x18f9781b, 0x280818bf0fa7e28e},
	} {
		token, idsn := keyHash(c.key)
		if token != c.token || idsn != c.idsn {
			t.Errorf("key %#x: token %#x idsn %#x, want %#x %#x", c.key, token, idsn, c.token, c.idsn)
		}
	}
}
