// SPDX-License-Identifier: Apache-2.0

package integrity

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/blocking"
)

// An arm with +wire captures, in the server's namespace, every segment
// the server receives, payload included (lab/blocking's capture and
// tracker: subflows, ISNs, keys and DSS mappings). For a connection that
// delivered wrong bytes it then checks each segment against the stream:
// does the segment carry the bytes its DSS mapping says it carries?
//
//   - If one does not, the sender put a wrong mapping on the wire (or the
//     right mapping on the wrong data): the fault is on the sending side.
//   - If every one does, what arrived was right and the receiver put it
//     together wrong: the fault is in the receiver's reassembly.
//
// The capture sees the packets where the server's interface hands them to
// the stack, after the router, with GRO off: what TCP got.

// wireSnap is what the capture keeps of a packet: the whole of it at this
// MTU.
const wireSnap = 2048

// wireConns is how many recent connections the capture remembers: those
// run one at a time, and a bad one is checked as soon as its verdict is in.
const wireConns = 8

// wireSink is the capture's sink: a tracker that keeps segments, and the
// first packets of every subflow both ways (its handshake and what came
// right after), guarded, since the capture's goroutine feeds it while the
// arm reads it.
type wireSink struct {
	mu     sync.Mutex
	t      *blocking.Tracker
	starts map[[2]netip.AddrPort][]WirePacket // by (client, server), at most wireStart each
	order  [][2]netip.AddrPort                // oldest first, at most wireConns*4
}

// wireStart is how many packets of a subflow's start are kept.
const wireStart = 16

func newWireSink() *wireSink {
	t := blocking.NewTracker()
	t.KeepSegments, t.Limit = true, wireConns
	return &wireSink{t: t, starts: map[[2]netip.AddrPort][]WirePacket{}}
}

func (w *wireSink) Add(p blocking.Packet, at time.Time, inbound bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Add(p, at, inbound)
	key := [2]netip.AddrPort{p.Src, p.Dst}
	if !inbound {
		key = [2]netip.AddrPort{p.Dst, p.Src}
	}
	if inbound && p.SYN && !p.ACK {
		if len(w.order) == wireConns*4 {
			delete(w.starts, w.order[0])
			w.order = w.order[1:]
		}
		w.order = append(w.order, key)
		w.starts[key] = nil
	}
	pkts, ok := w.starts[key]
	if !ok || len(pkts) == wireStart {
		return
	}
	w.starts[key] = append(pkts, WirePacket{At: at, In: inbound, SYN: p.SYN, ACK: p.ACK, FIN: p.FIN, RST: p.RST,
		Seq: p.Seq, AckSeq: p.AckSeq, Len: p.PayloadLen, MPC: p.MPC, Join: p.Join, Map: p.Map, SSN: p.SSN, DataLen: p.DataLen})
}

// WirePacket is one of a subflow's first packets, either way.
type WirePacket struct {
	At      time.Time `json:"at"`
	In      bool      `json:"in"` // toward the server
	SYN     bool      `json:"syn"`
	ACK     bool      `json:"ack"`
	FIN     bool      `json:"fin"`
	RST     bool      `json:"rst"`
	Seq     uint32    `json:"seq"`
	AckSeq  uint32    `json:"ack_seq"`
	Len     int       `json:"len"`
	MPC     bool      `json:"mp_capable"`
	Join    bool      `json:"mp_join"`
	Map     bool      `json:"dss_map"` // a DSS mapping: SSN and DataLen
	SSN     uint32    `json:"ssn,omitempty"`
	DataLen uint16    `json:"data_len,omitempty"`
}

// conn returns a copy of what was captured of the connection whose initial
// subflow the client opened from client, and the first packets of each of
// its subflows: the initial one's, then those of the joins that started
// after it and before the next connection (they run one at a time).
func (w *wireSink) conn(client netip.AddrPort) (blocking.Conn, [][]WirePacket, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.t.Conn(client)
	if c == nil {
		return blocking.Conn{}, nil, false
	}
	out := blocking.Conn{Client: c.Client, Server: c.Server, Packets: c.Packets, Started: c.Started}
	out.SubflowBytes = append(out.SubflowBytes, c.SubflowBytes...)
	out.Segments = append(out.Segments, c.Segments...)
	var starts [][]WirePacket
	for _, k := range w.order {
		pkts := w.starts[k]
		switch {
		case len(pkts) == 0:
		case pkts[0].MPC && k[0] == client:
			starts = [][]WirePacket{append([]WirePacket(nil), pkts...)}
		case starts == nil:
		case pkts[0].MPC:
			return out, starts, true // the next connection
		case pkts[0].Join:
			starts = append(starts, append([]WirePacket(nil), pkts...))
		}
	}
	return out, starts, true
}

// Wire is what the server received of one bad connection, checked segment
// by segment. Offsets are payload offsets, as in Finding (the stream's are
// 16 more: the header).
type Wire struct {
	Subflows     []uint64      `json:"subflow_bytes"`      // payload bytes each subflow carried in, retransmissions included
	Segments     int           `json:"segments"`           // segments (pieces under one mapping) checked
	Short        int           `json:"short"`              // of them, cut by the capture: checked as far as kept
	Uncovered    int64         `json:"uncovered"`          // stream bytes no segment's mapping covered
	Mismatched   int           `json:"mismatched"`         // segments whose bytes are not those at the offset their mapping gives
	Probes       int           `json:"probes,omitempty"`   // zero-window probes: one byte mapped one place back (isProbe), not checked
	Examples     []WireSegment `json:"examples,omitempty"` // the first few of them
	AtWrong      []WireSegment `json:"at_wrong"`           // segments mapped over the first wrong byte
	AtSource     []WireSegment `json:"at_source"`          // segments mapped over where the delivered bytes were sent
	CaptureDrops uint64        `json:"capture_drops"`      // packets the capture lost during the arm: a drop can hide a segment
	// Starts are each subflow's first packets, both ways (the initial
	// subflow first): its handshake, and what arrived before and after
	// the server acknowledged it.
	Starts  [][]WirePacket `json:"starts,omitempty"`
	started time.Time
}

// WireSegment is one segment as captured.
type WireSegment struct {
	Subflow int     `json:"subflow"` // 0: the initial one
	Seq     uint32  `json:"seq"`     // relative subflow sequence number
	Len     int     `json:"len"`
	Offset  int64   `json:"offset"` // payload offset its mapping gives
	Holds   int64   `json:"holds"`  // payload offset of the bytes it carried; -1: found nowhere in the stream
	AtMs    float64 `json:"at_ms"`  // since the initial subflow's SYN
}

// maxExamples is how many mismatched segments a Wire keeps.
const maxExamples = 8

// Verdict says in words which side the capture points at.
func (w Wire) Verdict() string {
	switch {
	case w.Mismatched > 0:
		return fmt.Sprintf("%d segment(s) on the wire carried bytes other than those their DSS mapping names: the sender's side", w.Mismatched)
	case w.Uncovered > 0 || w.CaptureDrops > 0:
		return fmt.Sprintf("no segment disagreed with its mapping, but the capture is incomplete (%d stream bytes uncovered, %d packets dropped)", w.Uncovered, w.CaptureDrops)
	}
	return "every segment carried the bytes its DSS mapping names and every byte arrived: the receiver's reassembly"
}

// checkWire checks a captured connection against the stream it was sent
// (wireStream: the 16-byte header then the pattern). f, if not nil, is what the connection
// delivered wrong: the Wire then names the segments over its first wrong
// byte and over where the bytes delivered there had been sent.
func checkWire(c blocking.Conn, stream []byte, f *Finding) *Wire {
	w := &Wire{Subflows: c.SubflowBytes, Segments: len(c.Segments), started: c.Started}
	covered := make([]bool, len(stream))
	wrong, source := int64(-1), int64(-1)
	if f != nil {
		wrong, source = f.Offset+16, f.Offset+16
		if d, ok := f.Shift(); ok {
			source += d
		}
	}
	for _, s := range c.Segments {
		seg := WireSegment{Subflow: s.Subflow, Seq: s.Seq, Len: s.Len, Offset: int64(s.Offset) - 16,
			Holds: -1, AtMs: float64(s.At.Sub(c.Started).Microseconds()) / 1e3}
		if len(s.Data) < s.Len {
			w.Short++
		}
		off := int64(s.Offset)
		end := off + int64(len(s.Data))
		switch {
		case off >= 0 && end <= int64(len(stream)) && bytes.Equal(s.Data, stream[off:end]):
			seg.Holds = seg.Offset
			for i := off; i < min(off+int64(s.Len), int64(len(stream))); i++ {
				covered[i] = true
			}
		case isProbe(s, stream):
			w.Probes++
			continue
		default:
			seg.Holds = holds(stream, s.Data)
			w.Mismatched++
			if len(w.Examples) < maxExamples {
				w.Examples = append(w.Examples, seg)
			}
		}
		if wrong >= 0 && off <= wrong && wrong < off+int64(s.Len) {
			w.AtWrong = append(w.AtWrong, seg)
		}
		if source != wrong && off <= source && source < off+int64(s.Len) {
			w.AtSource = append(w.AtSource, seg)
		}
	}
	for _, ok := range covered {
		if !ok {
			w.Uncovered++
		}
	}
	return w
}

// isProbe says whether s, which does not carry what its mapping names, is
// MPTCP's zero-window probe: when the peer's data-level window is closed
// and everything sent is acknowledged, Linux (net/mptcp/protocol.c,
// mptcp_sendmsg_frag) sends one byte mapped to snd_una - 1, data the
// receiver already has and drops, but copies it from the next unsent
// place: the byte after the one its mapping names. It carries nothing the
// receiver keeps, so it is neither right nor wrong.
func isProbe(s blocking.Segment, stream []byte) bool {
	next := s.Offset + 1
	return s.Len == 1 && len(s.Data) == 1 && next < uint64(len(stream)) && s.Data[0] == stream[next]
}

// holds is the payload offset in stream of data's first bytes, -1 if they
// occur nowhere (16 bytes identify a place; a shorter segment is looked up
// whole).
func holds(stream, data []byte) int64 {
	p := data[:min(len(data), probe)]
	if len(p) == 0 {
		return -1
	}
	i := bytes.Index(stream, p)
	if i < 0 {
		return -1
	}
	return int64(i) - 16
}

// Right says every segment carried what its mapping names and every stream
// byte arrived, with nothing lost to the capture.
func (w Wire) Right() bool { return w.Mismatched == 0 && w.Uncovered == 0 && w.CaptureDrops == 0 }

// describe prints a Wire for the text report.
func (w Wire) describe() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "wire: %d segments (%d zero-window probes), subflow bytes %v, %s", w.Segments, w.Probes, w.Subflows, w.Verdict())
	for _, s := range w.Examples {
		fmt.Fprintf(&b, "\n      mismatched: %s", s)
	}
	for _, s := range w.AtWrong {
		fmt.Fprintf(&b, "\n      over the first wrong byte: %s", s)
	}
	for _, s := range w.AtSource {
		fmt.Fprintf(&b, "\n      over the bytes delivered there: %s", s)
	}
	for i, pkts := range w.Starts {
		fmt.Fprintf(&b, "\n      subflow %d's first packets (ms since the connection's SYN; seq and ack relative to the client's ISN):", i)
		for _, p := range pkts {
			fmt.Fprintf(&b, "\n        %s", p.describe(w.started, pkts[0].Seq))
		}
	}
	return b.String()
}

// describe is one packet in a timeline: time, direction, flags, the
// client's sequence space (seq inbound, ack outbound), and what MPTCP
// option it carried.
func (p WirePacket) describe(start time.Time, isn uint32) string {
	dir := "<-"
	if p.In {
		dir = "->"
	}
	var flags string
	for _, f := range []struct {
		on   bool
		name string
	}{{p.SYN, "S"}, {p.ACK, "."}, {p.FIN, "F"}, {p.RST, "R"}} {
		if f.on {
			flags += f.name
		}
	}
	at := float64(p.At.Sub(start).Microseconds()) / 1e3
	s := fmt.Sprintf("%8.3f %s %-3s", at, dir, flags)
	if p.In {
		s += fmt.Sprintf(" seq %d len %d", p.Seq-isn, p.Len)
	} else {
		s += fmt.Sprintf(" ack %d", p.AckSeq-isn)
	}
	switch {
	case p.MPC:
		s += " MP_CAPABLE"
	case p.Join:
		s += " MP_JOIN"
	}
	if p.Map {
		s += fmt.Sprintf(" DSS map ssn %d len %d", p.SSN, p.DataLen)
	}
	return s
}

func (s WireSegment) String() string {
	return fmt.Sprintf("subflow %d seq %d len %d, mapped to offset %d, holds offset %d, at %.3f ms", s.Subflow, s.Seq, s.Len, s.Offset, s.Holds, s.AtMs)
}

// wireStream is what a connection sends: the 16-byte header (seed and
// size), then the pattern.
func wireStream(seed uint64, size int) []byte {
	stream := make([]byte, 16, 16+size)
	binary.BigEndian.PutUint64(stream[:8], seed)
	binary.BigEndian.PutUint64(stream[8:], uint64(size))
	return append(stream, Pattern(seed, size)...)
}

// inspect checks a connection's captured segments, once the capture has
// had time to read the last of them.
//
// The capture reads the socket in its own goroutine and can lag behind
// the connection on a loaded machine, so the check is repeated until every
// stream byte is covered or wireSettle has passed: a connection found
// incomplete is one the capture did not see whole, not one it was late on.
func inspect(wire *wireSink, capture *blocking.Capture, out outcome, size int) *Wire {
	client := netip.AddrPortFrom(out.local.Addr().Unmap(), out.local.Port())
	stream := wireStream(out.seed, size)
	deadline := time.Now().Add(wireSettle)
	for {
		time.Sleep(wirePoll)
		w := &Wire{}
		if c, starts, ok := wire.conn(client); ok {
			w = checkWire(c, stream, out.res.finding)
			w.Starts = starts
		}
		w.CaptureDrops = capture.Drops()
		if (w.Segments > 0 && w.Uncovered == 0) || time.Now().After(deadline) {
			return w
		}
	}
}

// wireSettle is how long a connection's check waits at most for the
// capture to read what is still queued for it, wirePoll how often it
// looks, and wireSample how often a good connection is checked too.
const (
	wireSettle = 5 * time.Second
	wirePoll   = 100 * time.Millisecond
	wireSample = 1000
)
