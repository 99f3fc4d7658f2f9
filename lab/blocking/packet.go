// SPDX-License-Identifier: Apache-2.0

package blocking

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Packet is what the tracker needs of one captured IPv4/TCP segment: its
// addresses, sequence numbers, window and MPTCP options (RFC 8684).
type Packet struct {
	Src, Dst   netip.AddrPort
	Seq        uint32
	AckSeq     uint32 // the acknowledgment number (meaningful with ACK)
	PayloadLen int
	SYN, ACK   bool
	FIN, RST   bool
	Window     uint16 // as on the wire, before scaling
	WScale     int    // the window-scale option (SYNs only); -1 when absent

	// MP_CAPABLE (subtype 0).
	MPC        bool
	MPCKeys    int    // keys carried: 0 (v1 SYN), 1 (SYN/ACK) or 2 (third ACK, or first data)
	SenderKey  uint64 // the sending host's key
	PeerKey    uint64 // the receiving host's key (MPCKeys == 2)
	MPCDataLen uint16 // data-level length of a v1 MP_CAPABLE carrying data; 0 otherwise

	// MP_JOIN on a SYN (subtype 1): the token of the connection joined.
	Join      bool
	JoinToken uint32

	// DSS (subtype 2) with a mapping (the M flag).
	Map      bool
	DSN      uint64 // data sequence number of the mapping's first byte
	DSN64    bool   // DSN is 8 octets; else only its low 32 bits are known
	SSN      uint32 // subflow sequence number, relative to the subflow's ISN
	DataLen  uint16 // data-level length, including a DATA_FIN
	DataFIN  bool
	Checksum bool // the mapping carries a DSS checksum (never trusted, just skipped)

	// Payload is the part of the payload the capture kept: none with the
	// tracker's header-only snap length, all of it with a long enough one
	// (StartCaptureSnap). ParsePacket leaves it pointing into its input.
	Payload []byte
}

// ErrNotTCP means the packet is not an IPv4 TCP segment (ignore it).
var ErrNotTCP = errors.New("not IPv4/TCP")

const (
	optEOL    = 0
	optNOP    = 1
	optWScale = 3
	optMPTCP  = 30

	mptcpCapable = 0
	mptcpJoin    = 1
	mptcpDSS     = 2
)

// ParsePacket parses an IPv4 packet (from its IP header on, as an
// AF_PACKET SOCK_DGRAM socket delivers it). Only the headers are needed:
// a capture may cut the payload off, the IP total length says how long
// it was. Fragments and non-TCP packets give ErrNotTCP; malformed TCP
// options give an error saying where.
func ParsePacket(b []byte) (Packet, error) {
	var p Packet
	p.WScale = -1
	if len(b) < 20 || b[0]>>4 != 4 {
		return p, ErrNotTCP
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if ihl < 20 || total < ihl || len(b) < ihl+20 {
		return p, ErrNotTCP
	}
	if b[9] != 6 { // protocol TCP
		return p, ErrNotTCP
	}
	if fo := binary.BigEndian.Uint16(b[6:8]); fo&0x3fff != 0 { // MF or a fragment offset
		return p, ErrNotTCP
	}
	src := netip.AddrFrom4([4]byte(b[12:16]))
	dst := netip.AddrFrom4([4]byte(b[16:20]))
	t := b[ihl:]
	p.Src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(t[0:2]))
	p.Dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(t[2:4]))
	p.Seq = binary.BigEndian.Uint32(t[4:8])
	p.AckSeq = binary.BigEndian.Uint32(t[8:12])
	doff := int(t[12]>>4) * 4
	flags := t[13]
	p.FIN, p.SYN, p.RST, p.ACK = flags&0x01 != 0, flags&0x02 != 0, flags&0x04 != 0, flags&0x10 != 0
	p.Window = binary.BigEndian.Uint16(t[14:16])
	if doff < 20 || len(t) < doff || total < ihl+doff {
		return p, fmt.Errorf("TCP header of %d bytes in a packet of %d captured, %d long", doff, len(b), total)
	}
	p.PayloadLen = total - ihl - doff
	if end := min(len(t), total-ihl); end > doff {
		p.Payload = t[doff:end]
	}
	if err := p.parseOptions(t[20:doff]); err != nil {
		return p, fmt.Errorf("%s -> %s seq %d: %w", p.Src, p.Dst, p.Seq, err)
	}
	return p, nil
}

func (p *Packet) parseOptions(o []byte) error {
	for len(o) > 0 {
		kind := o[0]
		if kind == optEOL {
			return nil
		}
		if kind == optNOP {
			o = o[1:]
			continue
		}
		if len(o) < 2 || int(o[1]) < 2 || int(o[1]) > len(o) {
			return fmt.Errorf("TCP option %d overruns the header", kind)
		}
		opt := o[:o[1]]
		o = o[o[1]:]
		switch kind {
		case optWScale:
			if len(opt) == 3 {
				p.WScale = int(opt[2])
			}
		case optMPTCP:
			if err := p.parseMPTCP(opt); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseMPTCP reads the options the tracker uses; the others (ADD_ADDR,
// MP_PRIO, ...) are skipped.
func (p *Packet) parseMPTCP(opt []byte) error {
	if len(opt) < 3 {
		return errors.New("MPTCP option without a subtype")
	}
	switch opt[2] >> 4 {
	case mptcpCapable:
		p.MPC = true
		// kind, length, subtype|version, flags, then keys and length.
		switch len(opt) {
		case 4: // v1 SYN
		case 12:
			p.MPCKeys, p.SenderKey = 1, binary.BigEndian.Uint64(opt[4:12])
		case 20, 22, 24:
			p.MPCKeys = 2
			p.SenderKey = binary.BigEndian.Uint64(opt[4:12])
			p.PeerKey = binary.BigEndian.Uint64(opt[12:20])
			if len(opt) >= 22 {
				p.MPCDataLen = binary.BigEndian.Uint16(opt[20:22])
			}
		default:
			return fmt.Errorf("MP_CAPABLE of length %d", len(opt))
		}
	case mptcpJoin:
		if p.SYN && !p.ACK {
			if len(opt) != 12 {
				return fmt.Errorf("MP_JOIN SYN of length %d, want 12", len(opt))
			}
			p.Join, p.JoinToken = true, binary.BigEndian.Uint32(opt[4:8])
		}
	case mptcpDSS:
		return p.parseDSS(opt)
	}
	return nil
}

// DSS flags (the low bits of the byte after the subtype).
const (
	dssAckPresent = 1 << 0 // A
	dssAck64      = 1 << 1 // a
	dssMapPresent = 1 << 2 // M
	dssDSN64      = 1 << 3 // m
	dssDataFIN    = 1 << 4 // F
)

func (p *Packet) parseDSS(opt []byte) error {
	if len(opt) < 4 {
		return fmt.Errorf("DSS of length %d", len(opt))
	}
	f := opt[3]
	need := 4
	if f&dssAckPresent != 0 {
		need += 4
		if f&dssAck64 != 0 {
			need += 4
		}
	}
	mapAt := need
	if f&dssMapPresent != 0 {
		need += 4 + 4 + 2 // DSN (low 32 bits at least), SSN, data-level length
		if f&dssDSN64 != 0 {
			need += 4
		}
	}
	// A checksum (2 bytes) follows the mapping when the connection
	// negotiated one; the length tells.
	if len(opt) != need && !(f&dssMapPresent != 0 && len(opt) == need+2) {
		return fmt.Errorf("DSS of length %d with flags %#x, want %d", len(opt), f, need)
	}
	if f&dssMapPresent == 0 {
		return nil
	}
	m := opt[mapAt:]
	p.Map, p.DataFIN, p.Checksum = true, f&dssDataFIN != 0, len(opt) == need+2
	if f&dssDSN64 != 0 {
		p.DSN, p.DSN64 = binary.BigEndian.Uint64(m[:8]), true
		m = m[8:]
	} else {
		p.DSN = uint64(binary.BigEndian.Uint32(m[:4]))
		m = m[4:]
	}
	p.SSN = binary.BigEndian.Uint32(m[:4])
	p.DataLen = binary.BigEndian.Uint16(m[4:6])
	return nil
}
