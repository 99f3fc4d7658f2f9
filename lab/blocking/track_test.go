// SPDX-License-Identifier: Apache-2.0

package blocking

import (
	"net/netip"
	"testing"
	"time"
)

// A connection as the server's host sees it: the MP_CAPABLE handshake and
// first data on subflow 1, a second subflow joining by token, data mapped
// on both (one mapping spanning segments that carry none), a redundant
// copy and a retransmission that must not move first arrivals, and a
// DATA_FIN. Every byte must land at its stream offset with the time of
// its first arrival.
func TestTrackerJoinsSubflowsAndMappings(t *testing.T) {
	const (
		clientKey = 0x0123456789abcdef
		serverKey = 0xfedcba9876543210
	)
	var isn1 uint32 = 0xfffffff0 // wraps within the transfer
	var isn2 uint32 = 5000
	token, _ := keyHash(serverKey)
	_, idsn := keyHash(clientKey)
	base := time.Unix(1000, 0)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

	c1, c2, srv := "10.0.0.1:40000", "10.0.1.1:40001", "10.1.0.1:5201"
	tr := NewTracker()
	in := func(ms int, s seg) {
		t.Helper()
		tr.Add(mustParse(t, s), at(ms), true)
	}
	out := func(ms int, s seg) {
		t.Helper()
		tr.Add(mustParse(t, s), at(ms), false)
	}
	in(0, seg{src: c1, dst: srv, seq: isn1, flags: fSYN, opts: [][]byte{mpcSYN()}})
	out(1, seg{src: srv, dst: c1, seq: 1, flags: fSYN | fACK, opts: [][]byte{mpcSYNACK(serverKey), {optWScale, 3, 4}}})
	in(2, seg{src: c1, dst: srv, seq: isn1 + 1, flags: fACK, opts: [][]byte{mpcACK(clientKey, serverKey)}})
	// First data: MP_CAPABLE with a data-level length, stream [0, 1000).
	in(3, seg{src: c1, dst: srv, seq: isn1 + 1, flags: fACK, opts: [][]byte{mpcData(clientKey, serverKey, 1000)}, n: 1000})
	out(4, seg{src: srv, dst: c1, seq: 2, flags: fACK, window: 1000})
	// Subflow 2 joins.
	in(5, seg{src: c2, dst: srv, seq: isn2, flags: fSYN, opts: [][]byte{joinSYN(token)}})
	// Subflow 2 carries stream [2000, 4000) in one mapping over two
	// segments; only the first carries it.
	in(10, seg{src: c2, dst: srv, seq: isn2 + 1, flags: fACK, opts: [][]byte{dss64(idsn+1+2000, 1, 2000, false)}, n: 1000})
	in(11, seg{src: c2, dst: srv, seq: isn2 + 1001, flags: fACK, n: 1000})
	// Subflow 1 carries [1000, 2000) later (the slow path), over the
	// sequence-number wrap, with a 32-bit DSN.
	in(50, seg{src: c1, dst: srv, seq: isn1 + 1001, flags: fACK, opts: [][]byte{dss32(uint32(idsn+1+1000), 1001, 1000)}, n: 1000})
	// A redundant copy of [2000, 2500) and a retransmission of [0, 1000).
	in(60, seg{src: c1, dst: srv, seq: isn1 + 2001, flags: fACK, opts: [][]byte{dss64(idsn+1+2000, 2001, 500, false)}, n: 500})
	in(70, seg{src: c1, dst: srv, seq: isn1 + 1, flags: fACK, opts: [][]byte{dss64(idsn+1, 1, 1000, false)}, n: 1000})
	// The last data, [4000, 4100), with the DATA_FIN in its mapping.
	in(80, seg{src: c2, dst: srv, seq: isn2 + 2001, flags: fACK, opts: [][]byte{dss64(idsn+1+4000, 2001, 101, true)}, n: 100})
	// Plain TCP to the same server is no connection of ours.
	in(90, seg{src: "10.0.0.1:40002", dst: srv, seq: 1, flags: fSYN})
	in(91, seg{src: "10.0.0.1:40002", dst: srv, seq: 2, flags: fACK, n: 100})

	if len(tr.Conns()) != 1 {
		t.Fatalf("%d connections, want 1", len(tr.Conns()))
	}
	c := tr.Conn(netip.MustParseAddrPort(c1))
	if c == nil {
		t.Fatal("the connection is not filed under its initial subflow's client address")
	}
	if c.Subflows() != 2 {
		t.Errorf("%d subflows, want 2", c.Subflows())
	}
	if c.MaxWindow != 1000<<4 {
		t.Errorf("max window %d, want 1000<<4", c.MaxWindow)
	}
	if c.Received() != 4100 {
		t.Errorf("%d stream bytes arrived, want 4100", c.Received())
	}
	if tr.Unmapped != 100 {
		t.Errorf("%d unmapped bytes, want the plain TCP flow's 100", tr.Unmapped)
	}
	for _, q := range []struct {
		off, n uint64
		ms     int
	}{
		{0, 1000, 3},     // the retransmission at 70 ms does not count
		{0, 1, 3},        //
		{1000, 1000, 50}, // the slow path's
		{2000, 500, 10},  // the redundant copy at 60 ms does not count
		{2900, 200, 11},  // across the two segments of one mapping
		{500, 1000, 50},  // a record waiting for the slow path
		{3500, 600, 80},  //
		{0, 4100, 80},
	} {
		got, ok := c.Arrived(q.off, q.n)
		if !ok || !got.Equal(at(q.ms)) {
			t.Errorf("[%d, %d): arrived %v (%v), want %d ms", q.off, q.off+q.n, got.Sub(base), ok, q.ms)
		}
	}
	if _, ok := c.Arrived(4000, 200); ok {
		t.Error("[4000, 4200) complete, but only 4100 bytes were sent")
	}
}

// With KeepSegments, each inbound segment is kept with the stream offset
// its mapping gives, cut where a mapping ends; with Limit, the oldest
// connection is forgotten, joins to it included.
func TestTrackerKeepsSegmentsWithinLimit(t *testing.T) {
	const clientKey, serverKey = 0x0123456789abcdef, 0xfedcba9876543210
	token, _ := keyHash(serverKey)
	_, idsn := keyHash(clientKey)
	srv := "10.1.0.1:5201"
	tr := NewTracker()
	tr.KeepSegments, tr.Limit = true, 1
	in := func(s seg) {
		t.Helper()
		tr.Add(mustParse(t, s), time.Unix(1000, 0), true)
	}
	open := func(c1, c2 string) {
		in(seg{src: c1, dst: srv, seq: 100, flags: fSYN, opts: [][]byte{mpcSYN()}})
		in(seg{src: c1, dst: srv, seq: 101, flags: fACK, opts: [][]byte{mpcACK(clientKey, serverKey)}})
		in(seg{src: c2, dst: srv, seq: 500, flags: fSYN, opts: [][]byte{joinSYN(token)}})
	}
	open("10.0.0.1:1000", "10.0.1.1:1001")
	// Two mappings in one segment on the join: [0, 300) and [1000, 1200).
	in(seg{src: "10.0.1.1:1001", dst: srv, seq: 501, flags: fACK, opts: [][]byte{dss64(idsn+1, 1, 300, false)}, n: 300, capture: 300})
	in(seg{src: "10.0.1.1:1001", dst: srv, seq: 801, flags: fACK, opts: [][]byte{dss64(idsn+1+1000, 301, 200, false)}, n: 200, capture: 50})
	c := tr.Conn(netip.MustParseAddrPort("10.0.0.1:1000"))
	if c == nil || len(c.Segments) != 2 {
		t.Fatalf("connection %v, want 2 segments", c)
	}
	for i, want := range []Segment{{Subflow: 1, Seq: 1, Offset: 0, Len: 300}, {Subflow: 1, Seq: 301, Offset: 1000, Len: 200}} {
		got := c.Segments[i]
		if got.Subflow != want.Subflow || got.Seq != want.Seq || got.Offset != want.Offset || got.Len != want.Len {
			t.Errorf("segment %d: %+v, want %+v", i, got, want)
		}
	}
	if len(c.Segments[0].Data) != 300 || len(c.Segments[1].Data) != 50 {
		t.Errorf("kept %d and %d payload bytes, want 300 and the 50 captured", len(c.Segments[0].Data), len(c.Segments[1].Data))
	}

	// A second connection (the same keys: a join by that token is now
	// its) makes the tracker forget the first, its join's subflow too.
	open("10.0.0.1:2000", "10.0.1.1:2001")
	if len(tr.Conns()) != 1 || tr.Conn(netip.MustParseAddrPort("10.0.0.1:1000")) != nil {
		t.Fatalf("%d connections remembered, the first among them: want only the second", len(tr.Conns()))
	}
	before := tr.Unmapped
	in(seg{src: "10.0.1.1:1001", dst: srv, seq: 1001, flags: fACK, opts: [][]byte{dss64(idsn+1+1200, 501, 10, false)}, n: 10})
	if tr.Unmapped != before+10 {
		t.Error("a segment of the forgotten connection's join was still placed")
	}
}

// A record is complete only when no byte is missing; its time is the
// latest first arrival among its bytes.
func TestArrivals(t *testing.T) {
	var a Arrivals
	base := time.Unix(0, 0)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	a.Add(100, 200, at(1))
	a.Add(300, 400, at(2))
	a.Add(150, 350, at(3)) // only [200, 300) is new
	a.Add(0, 100, at(4))
	a.Add(0, 400, at(9)) // nothing new
	a.Add(500, 500, at(9))
	for _, q := range []struct {
		lo, hi uint64
		s      int
		ok     bool
	}{
		{100, 200, 1, true},
		{150, 250, 3, true},
		{300, 400, 2, true},
		{0, 400, 4, true},
		{350, 450, 0, false},
		{450, 460, 0, false},
	} {
		got, ok := a.Complete(q.lo, q.hi)
		if ok != q.ok || (ok && !got.Equal(at(q.s))) {
			t.Errorf("[%d, %d): %v %v, want %d s %v", q.lo, q.hi, got.Sub(base), ok, q.s, q.ok)
		}
	}
	if a.Covered() != 400 {
		t.Errorf("covered %d, want 400", a.Covered())
	}
	a.Add(400, 450, at(5)) // adding after a query re-sorts
	if got, ok := a.Complete(350, 450); !ok || !got.Equal(at(5)) {
		t.Errorf("[350, 450) after the gap filled: %v %v", got.Sub(base), ok)
	}
}
