// SPDX-License-Identifier: Apache-2.0

package blocking

import (
	"crypto/sha256"
	"encoding/binary"
	"net/netip"
	"slices"
	"time"
)

// Tracker follows the MPTCP connections seen at the receiving host and
// learns, for each, when every byte of the client's data stream first
// arrived there. It is fed every captured packet in capture order, each
// with its time and direction (inbound: toward the receiving host).
//
// How a packet's bytes become stream offsets (RFC 8684):
//   - the client's key (MP_CAPABLE of the third ACK, or of the first data
//     packet) gives its initial data sequence number: the low 64 bits of
//     SHA-256(key); the stream's byte 0 is IDSN+1;
//   - the server's key gives the token that MP_JOIN SYNs name, which ties
//     every further subflow to its connection;
//   - each subflow's SYN gives its ISN, so a segment's subflow-relative
//     sequence number is seq-ISN;
//   - a DSS mapping (or a v1 MP_CAPABLE with data: DSN IDSN+1 at subflow
//     sequence 1) maps a range of subflow sequence numbers onto data
//     sequence numbers. Linux repeats the mapping on every segment it
//     covers; segments without one use the subflow's recent mappings.
type Tracker struct {
	subflows map[flowKey]*subflow
	byToken  map[uint32]*Conn
	conns    []*Conn
	// Unmapped counts inbound payload bytes that could not be placed in a
	// stream: no known subflow (its SYN was not captured) or no mapping.
	Unmapped uint64
	// KeepSegments keeps every inbound segment of each connection, its
	// captured payload included, in Conn.Segments.
	KeepSegments bool
	// Limit, if set, is how many connections the tracker remembers: a new
	// one makes it forget the oldest, so a long capture stays bounded.
	Limit int
}

type flowKey struct{ client, server netip.AddrPort }

type subflow struct {
	conn   *Conn
	index  int    // in conn.SubflowBytes
	isn    uint32 // the client's initial sequence number
	wscale int    // the server's window scale, once its SYN/ACK was seen
	maps   []mapping
}

// A mapping in the subflow's relative sequence space.
type mapping struct {
	ssn uint32 // first relative subflow sequence number
	n   uint32 // data bytes (a DATA_FIN not counted)
	dsn uint64 // data sequence number of the first byte
}

// maxMaps is how many recent mappings a subflow keeps for segments that
// carry none; Linux sends one on every segment, so a few suffice.
const maxMaps = 64

// Conn is one MPTCP connection, as the receiving host saw it arrive.
type Conn struct {
	// Client is the client's end of the initial subflow (the address the
	// accepted socket reports as its peer), Server the server's.
	Client, Server netip.AddrPort
	// MaxWindow is the largest receive window the server advertised
	// (scaled), in bytes: the most data the client could have in flight.
	MaxWindow uint64
	// Packets counts inbound segments with payload.
	Packets int
	// SubflowBytes is the payload each subflow carried in, retransmissions
	// included, in the order the subflows' SYNs were seen (the initial
	// subflow first).
	SubflowBytes []uint64
	// Segments are the inbound segments with payload, in capture order,
	// each cut where its mapping ends (Tracker.KeepSegments).
	Segments []Segment
	// Started is when the initial subflow's SYN arrived.
	Started  time.Time
	arrivals Arrivals
	idsn     uint64
	keyed    bool // idsn is known
	token    uint32
	lastDSN  uint64
	keys     []flowKey // its subflows', for Tracker.Limit
}

// Segment is a piece of an inbound segment that one mapping covers.
type Segment struct {
	Subflow int       // index in Conn.SubflowBytes
	Seq     uint32    // relative subflow sequence number of its first byte
	Offset  uint64    // stream offset its mapping gives its first byte
	Len     int       // payload bytes
	Data    []byte    // the captured payload (shorter than Len if the capture cut it)
	At      time.Time // when it arrived
}

// Subflows counts the subflows whose SYN was seen.
func (c *Conn) Subflows() int { return len(c.SubflowBytes) }

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{subflows: map[flowKey]*subflow{}, byToken: map[uint32]*Conn{}}
}

// Conns returns the connections seen, in the order they started.
func (t *Tracker) Conns() []*Conn { return t.conns }

// Conn returns the connection whose initial subflow's client end is
// client, the latest if several were.
func (t *Tracker) Conn(client netip.AddrPort) *Conn {
	for i := len(t.conns) - 1; i >= 0; i-- {
		if t.conns[i].Client == client {
			return t.conns[i]
		}
	}
	return nil
}

// Arrived returns when the stream's bytes [off, off+n) had all arrived.
func (c *Conn) Arrived(off, n uint64) (time.Time, bool) { return c.arrivals.Complete(off, off+n) }

// Received is the number of distinct stream bytes that arrived.
func (c *Conn) Received() uint64 { return c.arrivals.Covered() }

// keyHash returns the token and the IDSN of an MPTCP key (RFC 8684 3.1:
// SHA-256 of the key in network order; the token is the most significant
// 32 bits of the hash, the IDSN the least significant 64).
func keyHash(key uint64) (token uint32, idsn uint64) {
	var in [8]byte
	binary.BigEndian.PutUint64(in[:], key)
	h := sha256.Sum256(in[:])
	return binary.BigEndian.Uint32(h[:4]), binary.BigEndian.Uint64(h[24:])
}

// Add feeds one packet seen at time at; inbound says it was traveling to
// the receiving host (the capture's PACKET_HOST), else from it.
func (t *Tracker) Add(p Packet, at time.Time, inbound bool) {
	if !inbound {
		t.outbound(p)
		return
	}
	key := flowKey{p.Src, p.Dst}
	sf := t.subflows[key]
	if p.SYN && !p.ACK {
		switch {
		case p.MPC:
			c := &Conn{Client: p.Src, Server: p.Dst, SubflowBytes: []uint64{0}, Started: at}
			sf = &subflow{conn: c, isn: p.Seq, wscale: -1}
			t.conns = append(t.conns, c)
			if t.Limit > 0 && len(t.conns) > t.Limit {
				t.forget(t.conns[0])
			}
		case p.Join:
			c := t.byToken[p.JoinToken]
			if c == nil {
				return // a join to a connection whose start was not seen
			}
			c.SubflowBytes = append(c.SubflowBytes, 0)
			sf = &subflow{conn: c, index: len(c.SubflowBytes) - 1, isn: p.Seq, wscale: -1}
		default:
			delete(t.subflows, key) // plain TCP, or a reused port
			return
		}
		t.subflows[key] = sf
		sf.conn.keys = append(sf.conn.keys, key)
		return
	}
	if sf == nil {
		t.Unmapped += uint64(p.PayloadLen)
		return
	}
	c := sf.conn
	if p.MPC && p.MPCKeys == 2 && !c.keyed {
		_, c.idsn = keyHash(p.SenderKey)
		token, _ := keyHash(p.PeerKey)
		t.byToken[token] = c
		c.token = token
		c.keyed = true
		c.lastDSN = c.idsn
	}
	if p.PayloadLen == 0 {
		return
	}
	if !c.keyed {
		t.Unmapped += uint64(p.PayloadLen)
		return
	}
	c.Packets++
	c.SubflowBytes[sf.index] += uint64(p.PayloadLen)
	switch {
	case p.Map:
		n := uint32(p.DataLen)
		if p.DataFIN && n > 0 {
			n--
		}
		sf.remember(mapping{ssn: p.SSN, n: n, dsn: c.expand(p.DSN, p.DSN64)})
	case p.MPC && p.MPCDataLen > 0:
		sf.remember(mapping{ssn: 1, n: uint32(p.MPCDataLen), dsn: c.idsn + 1})
	}
	first := p.Seq - sf.isn
	rel := first
	end := rel + uint32(p.PayloadLen)
	for rel != end {
		m, ok := sf.find(rel)
		if !ok {
			t.Unmapped += uint64(end - rel)
			return
		}
		n := min(end-rel, m.ssn+m.n-rel)
		dsn := m.dsn + uint64(rel-m.ssn)
		off := dsn - (c.idsn + 1)
		c.arrivals.Add(off, off+uint64(n), at)
		c.lastDSN = max(c.lastDSN, dsn+uint64(n))
		if t.KeepSegments {
			from := min(int(rel-first), len(p.Payload))
			to := min(from+int(n), len(p.Payload))
			c.Segments = append(c.Segments, Segment{Subflow: sf.index, Seq: rel, Offset: off, Len: int(n), Data: p.Payload[from:to], At: at})
		}
		rel += n
	}
}

// forget drops a connection and whatever leads to it.
func (t *Tracker) forget(c *Conn) {
	for _, k := range c.keys {
		if sf := t.subflows[k]; sf != nil && sf.conn == c {
			delete(t.subflows, k)
		}
	}
	if c.keyed && t.byToken[c.token] == c {
		delete(t.byToken, c.token)
	}
	t.conns = slices.DeleteFunc(t.conns, func(x *Conn) bool { return x == c })
}

// outbound notes the server's window scale (its SYN/ACK) and the largest
// window it advertised since.
func (t *Tracker) outbound(p Packet) {
	sf := t.subflows[flowKey{p.Dst, p.Src}]
	if sf == nil {
		return
	}
	if p.SYN {
		sf.wscale = p.WScale
		return
	}
	if sf.wscale < 0 {
		return // no scale known: the SYN/ACK was not seen or had no option
	}
	w := uint64(p.Window) << sf.wscale
	sf.conn.MaxWindow = max(sf.conn.MaxWindow, w)
}

// expand turns a 32-bit DSN into the 64-bit one nearest the highest seen.
func (c *Conn) expand(dsn uint64, is64 bool) uint64 {
	if is64 {
		return dsn
	}
	return c.lastDSN + uint64(int64(int32(uint32(dsn)-uint32(c.lastDSN))))
}

func (sf *subflow) remember(m mapping) {
	for i := len(sf.maps) - 1; i >= 0 && i >= len(sf.maps)-4; i-- {
		if sf.maps[i] == m {
			return // the same mapping, repeated on its next segment
		}
	}
	if len(sf.maps) == maxMaps {
		sf.maps = append(sf.maps[:0], sf.maps[1:]...)
	}
	sf.maps = append(sf.maps, m)
}

// find returns the latest mapping that covers relative sequence rel.
func (sf *subflow) find(rel uint32) (mapping, bool) {
	for i := len(sf.maps) - 1; i >= 0; i-- {
		m := sf.maps[i]
		if rel-m.ssn < m.n { // wraps correctly in uint32
			return m, true
		}
	}
	return mapping{}, false
}
