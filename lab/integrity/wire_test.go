// SPDX-License-Identifier: Apache-2.0

package integrity

import (
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/blocking"
)

// wireConn is a connection of size payload bytes as the server's capture
// would keep it: the stream (16-byte header, then the pattern) cut into
// segments of seg bytes, alternating between two subflows, each right
// under its mapping; change edits them before they are returned.
func wireConn(seed uint64, size, seg int, change func([]blocking.Segment, []byte)) blocking.Conn {
	stream := wireStream(seed, size)
	start := time.Unix(1000, 0)
	c := blocking.Conn{Started: start, SubflowBytes: make([]uint64, 2)}
	seq := [2]uint32{1, 1}
	for off := 0; off < len(stream); off += seg {
		n := min(seg, len(stream)-off)
		sf := (off / seg) % 2
		c.Segments = append(c.Segments, blocking.Segment{Subflow: sf, Seq: seq[sf], Offset: uint64(off), Len: n,
			Data: stream[off : off+n : off+n], At: start.Add(time.Duration(off) * time.Microsecond)})
		seq[sf] += uint32(n)
		c.SubflowBytes[sf] += uint64(n)
	}
	if change != nil {
		change(c.Segments, stream)
	}
	return c
}

func TestWireAllRightPointsAtTheReceiver(t *testing.T) {
	const seed, size = 7, 20000
	c := wireConn(seed, size, 1000, nil)
	// What the server delivered: 1000 bytes at payload offset 4984 that
	// belong 2000 further on (a misplaced segment).
	got := Pattern(seed, size)
	copy(got[4984:5984], Pattern(seed, size)[6984:7984])
	f := Check(0, got, Pattern(seed, size))
	w := checkWire(c, wireStream(seed, size), f)
	if w.Mismatched != 0 || w.Uncovered != 0 || w.Segments != 21 || w.Short != 0 {
		t.Fatalf("%+v: want 21 right segments covering everything", w)
	}
	if !strings.Contains(w.Verdict(), "receiver") {
		t.Errorf("verdict %q, want the receiver's reassembly", w.Verdict())
	}
	// Stream offset 5000 (payload 4984) is segment 5's first byte; the
	// bytes delivered there were sent at stream 7000, segment 7's.
	if len(w.AtWrong) != 1 || w.AtWrong[0].Offset != 4984 || w.AtWrong[0].Subflow != 1 {
		t.Errorf("over the first wrong byte: %v, want the segment mapped to payload offset 4984 on subflow 1", w.AtWrong)
	}
	if len(w.AtSource) != 1 || w.AtSource[0].Offset != 6984 || w.AtSource[0].Holds != 6984 {
		t.Errorf("over the bytes delivered there: %v, want the segment at payload offset 6984", w.AtSource)
	}
}

func TestWireMismatchPointsAtTheSender(t *testing.T) {
	const seed, size = 9, 20000
	// Segment 5 (stream [5000, 6000)) went out carrying stream [7000,
	// 8000) under its own mapping, as a sender that mapped the wrong data
	// would send it; nothing else carried [5000, 6000).
	c := wireConn(seed, size, 1000, func(segs []blocking.Segment, stream []byte) {
		segs[5].Data = stream[7000:8000]
	})
	got := Pattern(seed, size)
	copy(got[4984:5984], Pattern(seed, size)[6984:7984])
	w := checkWire(c, wireStream(seed, size), Check(0, got, Pattern(seed, size)))
	if w.Mismatched != 1 || len(w.Examples) != 1 {
		t.Fatalf("%+v: want the one mismatched segment", w)
	}
	if e := w.Examples[0]; e.Offset != 4984 || e.Holds != 6984 || e.Len != 1000 || e.AtMs != 5 {
		t.Errorf("mismatched segment %v, want mapped to 4984, holding 6984, 5 ms in", e)
	}
	if w.Uncovered != 1000 {
		t.Errorf("%d stream bytes uncovered, want the 1000 only the wrong segment was mapped over", w.Uncovered)
	}
	if !strings.Contains(w.Verdict(), "sender") {
		t.Errorf("verdict %q, want the sender's side", w.Verdict())
	}
}

// A segment the capture cut short is checked as far as it was kept, and a
// segment that holds bytes found nowhere says so.
func TestWireShortAndForeignSegments(t *testing.T) {
	const seed, size = 11, 5000
	c := wireConn(seed, size, 1000, func(segs []blocking.Segment, stream []byte) {
		segs[1].Data = segs[1].Data[:100]
		segs[2].Data = make([]byte, 1000) // zeros: in no ChaCha stream
	})
	w := checkWire(c, wireStream(seed, size), &Finding{Offset: 1984})
	if w.Short != 1 || w.Mismatched != 1 || w.Examples[0].Holds != -1 {
		t.Fatalf("%+v: want one short segment (right as far as kept) and one holding bytes found nowhere", w)
	}
	if w.Uncovered != 1000 {
		t.Errorf("%d uncovered, want the zeroed segment's 1000", w.Uncovered)
	}
}

// MPTCP's zero-window probe (one byte mapped to the data-level byte before
// the next unsent one, but carrying that next byte) is neither a mismatch
// nor coverage; a one-byte segment carrying anything else is a mismatch.
func TestWireZeroWindowProbe(t *testing.T) {
	const seed, size = 11, 20000
	stream := wireStream(seed, size)
	// After stream byte 9999 was acknowledged, the window closed: the
	// probe is mapped to 9999 and carries byte 10000.
	withProbe := func(b byte) *Wire {
		c := wireConn(seed, size, 1000, nil)
		p := blocking.Segment{Subflow: 0, Seq: c.Segments[10].Seq, Offset: 9999, Len: 1, Data: []byte{b}, At: c.Segments[9].At}
		c.Segments = append(c.Segments[:10:10], append([]blocking.Segment{p}, c.Segments[10:]...)...)
		return checkWire(c, wireStream(seed, size), nil)
	}
	if stream[9999] == stream[10000] {
		t.Fatal("the pattern repeats a byte at 9999: pick another seed")
	}
	if w := withProbe(stream[10000]); w.Probes != 1 || !w.Right() {
		t.Errorf("probe carrying the next byte: %+v, want 1 probe and a right connection", w)
	}
	other := stream[10000] + 1
	if other == stream[9999] {
		other++
	}
	if w := withProbe(other); w.Probes != 0 || w.Mismatched != 1 {
		t.Errorf("one byte carrying neither its own nor the next: %+v, want 1 mismatch", w)
	}
}
