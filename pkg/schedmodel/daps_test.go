// SPDX-License-Identifier: Apache-2.0

package schedmodel

import (
	"math"
	"testing"
)

// sf is a usable subflow for decision tables.
func sf(id, srtt, cwnd, inflight, notsent uint32) Subflow {
	return Subflow{Id: id, Flags: Active | MemFree, SrttUs: srtt, Cwnd: cwnd, Ssthresh: 1 << 30,
		Inflight: inflight, Mss: 1500, Notsent: notsent}
}

func conn(now uint64, sfs ...Subflow) *Conn {
	c := &Conn{NowUs: now, N: uint32(len(sfs))}
	copy(c.Sf[:], sfs)
	return c
}

// The lead, worked by hand from daps.bpf.c's formula: f cwnd 10, mss 1500,
// srtt 20 ms; s srtt 100 ms, cwnd 10; k = 1/2: d = 40 ms,
// L = 10*1500*40000/20000 = 30000 bytes (one-packet grant: no extra);
// a 3-packet grant adds 3000 * 10*100000 / (10*20000) = 15000. s goes
// first once f's queue is nearer L than one more push would make it:
// q >= L - g/2, g the push (a packet here, where the application has
// written nothing more).
// frag gives c more unsent data than a fragment.
func frag(c *Conn) *Conn {
	c.SndNxt, c.WriteSeq = 1000, 101000
	return c
}

func TestDAPSDecisions(t *testing.T) {
	const fast, slow = 20000, 100000
	backup := sf(3, 150000, 10, 0, 0)
	backup.Flags |= Backup
	unsampled := sf(2, 0, 10, 9, 0)
	cases := []struct {
		name string
		args Args
		c    *Conn
		want Out
	}{
		{"one subflow with room: its room", Args{}, conn(0, sf(1, fast, 10, 6, 0)), Out{Mask: 1, Burst: 6000}},
		{"one subflow, window full: nothing", Args{}, conn(0, sf(1, fast, 10, 10, 0)), Out{}},
		{"slow full, fast has room: fast's room", Args{}, conn(0, sf(1, fast, 10, 6, 0), sf(2, slow, 10, 10, 0)), Out{Mask: 1, Burst: 6000}},
		{"both full: nothing", Args{}, conn(0, sf(1, fast, 10, 10, 0), sf(2, slow, 10, 10, 0)), Out{}},
		{"slow has room, no lead: f gets the lead", Args{}, conn(0, sf(1, fast, 10, 10, 0), sf(2, slow, 10, 9, 0)), Out{Mask: 1, Burst: 30000}},
		{"f has room too: room plus lead", Args{}, conn(0, sf(1, fast, 10, 6, 0), sf(2, slow, 10, 9, 0)), Out{Mask: 1, Burst: 36000}},
		{"lead partly queued: the rest", Args{}, conn(0, sf(1, fast, 10, 10, 12000), sf(2, slow, 10, 9, 0)), Out{Mask: 1, Burst: 18000}},
		{"half a push short: s", Args{}, conn(0, sf(1, fast, 10, 10, 29250), sf(2, slow, 10, 9, 0)), Out{Mask: 2, Burst: 1500}},
		{"more than half a push short: f", Args{}, conn(0, sf(1, fast, 10, 10, 29249), sf(2, slow, 10, 9, 0)), Out{Mask: 1, Burst: 1500}},
		{"lead in place: slow, its room", Args{}, conn(0, sf(1, fast, 10, 10, 30000), sf(2, slow, 10, 9, 0)), Out{Mask: 2, Burst: 1500}},
		{"room counts against notsent", Args{}, conn(0, sf(1, fast, 10, 8, 30000), sf(2, slow, 10, 9, 0)), Out{Mask: 1, Burst: 3000}},
		{"3-packet grant: longer lead", Args{}, conn(0, sf(1, fast, 10, 10, 44249), sf(2, slow, 10, 7, 0)), Out{Mask: 1, Burst: 1500}},
		{"3-packet grant, lead in place", Args{}, conn(0, sf(1, fast, 10, 10, 44250), sf(2, slow, 10, 7, 0)), Out{Mask: 2, Burst: 4500}},
		// The application has written more than a fragment: each push
		// moves a whole one (32728 bytes), so the grant to s is one:
		// L = 30000 + 31228*10*100000/(10*20000) = 186140, and s goes at
		// q >= 186140 - 32728/2 = 169776.
		{"a fragment's lead, short", Args{}, frag(conn(0, sf(1, fast, 10, 10, 169775), sf(2, slow, 10, 9, 0))), Out{Mask: 1, Burst: 16365}},
		{"a fragment's lead, in place", Args{}, frag(conn(0, sf(1, fast, 10, 10, 169776), sf(2, slow, 10, 9, 0))), Out{Mask: 2, Burst: 32728}},
		{"k = all of the difference", Args{1024}, conn(0, sf(1, fast, 10, 10, 30000), sf(2, slow, 10, 9, 0)), Out{Mask: 1, Burst: 30000}},
		{"k above 1024 is 1024", Args{5000}, conn(0, sf(1, fast, 10, 10, 60000), sf(2, slow, 10, 9, 0)), Out{Mask: 2, Burst: 1500}},
		{"no RTT sample: minrtt's order", Args{}, conn(0, sf(1, fast, 10, 10, 0), unsampled), Out{Mask: 2, Burst: 1500}},
		{"the fastest is the reference, not the first", Args{}, conn(0, sf(2, slow, 10, 9, 0), sf(1, fast, 10, 10, 0)), Out{Mask: 2, Burst: 30000}},
		{"backup not used beside a usable subflow", Args{}, conn(0, sf(1, fast, 10, 10, 0), backup), Out{}},
		{"three subflows: the next slower with room", Args{}, conn(0, sf(1, fast, 10, 10, 30000), sf(2, 300000, 10, 9, 0), sf(3, slow, 10, 9, 0)), Out{Mask: 4, Burst: 1500}},
	}
	for _, k := range cases {
		m, err := New("daps", k.args)
		if err != nil {
			t.Fatal(err)
		}
		var s State
		if got := m.Send(k.c, &s); got != k.want {
			t.Errorf("%s: %+v, want %+v", k.name, got, k.want)
		}
		if s != (State{}) {
			t.Errorf("%s: daps keeps no words, left %v", k.name, s.W)
		}
	}
	// Reinjections: the lowest-RTT idle subflow, or none.
	for _, k := range []struct {
		name string
		c    *Conn
		mask uint32
	}{
		{"both idle: the faster", conn(0, sf(1, slow, 10, 0, 0), sf(2, fast, 10, 0, 0)), 0b10},
		{"fast has data in flight: the idle slow one", conn(0, sf(1, slow, 10, 0, 0), sf(2, fast, 10, 1, 0)), 0b01},
		{"fast has data queued: the idle slow one", conn(0, sf(1, slow, 10, 0, 0), sf(2, fast, 10, 0, 1)), 0b01},
		{"none idle: nowhere", conn(0, sf(1, slow, 10, 3, 0), sf(2, fast, 10, 10, 30000)), 0},
	} {
		var s State
		if got := NewDAPS(Args{}).Retrans(k.c, &s); got.Mask != k.mask {
			t.Errorf("reinjection, %s: on %b, want %b", k.name, got.Mask, k.mask)
		}
	}
}

// The seed's three cases (RTT0 = 20 ms; A = C1*RTT1/(C0*RTT0)) through the
// packet model, windows at the paths' BDP: DAPS splits the data
// eta*cwnd_f : cwnd_s = eta/A (= C0/C1), as the derivation says, and the
// receiver holds almost nothing out of order, where minrtt, with the same
// split, keeps fast-path data waiting behind slow packets.
func TestDAPSSeedCases(t *testing.T) {
	cases := []struct {
		c0, c1 uint64 // bits/s
		rtt1   uint64 // us
		a      float64
	}{
		{1e6, 1e6, 100000, 5},
		{1e6, 1e6, 200000, 10},
		{1.5e6, 0.5e6, 200000, 3.33},
	}
	for _, k := range cases {
		const rtt0 = 20000
		a := float64(k.c1*k.rtt1) / float64(k.c0*rtt0)
		if math.Abs(a-k.a) > 0.01 {
			t.Fatalf("case %+v: asymmetry %.2f", k, a)
		}
		eta := float64(k.rtt1) / rtt0
		want := eta / a
		// A window one packet above the BDP keeps the bottleneck busy
		// (a packet's serialisation is part of the round trip).
		win := func(c, rtt uint64) uint32 { return uint32((c/8*rtt/1e6+simMSS-1)/simMSS) + 1 }
		paths := []simPath{
			{rate: k.c0 / 8, rtt: rtt0, cwnd: win(k.c0, rtt0)},
			{rate: k.c1 / 8, rtt: k.rtt1, cwnd: win(k.c1, k.rtt1)},
		}
		d := simulate(NewDAPS(Args{}), paths, 20e6, simMSS)
		m := simulate(MinRTT{}, paths, 20e6, simMSS)
		ratio := float64(d.assigned[0]) / float64(d.assigned[1])
		t.Logf("A=%.2f eta=%.0f: daps split %d:%d = %.2f (derived %.2f), held avg %.2f max %d; minrtt held avg %.2f max %d",
			a, eta, d.assigned[0], d.assigned[1], ratio, want, d.heldAvg, d.maxHeld, m.heldAvg, m.maxHeld)
		if math.Abs(ratio-want) > 0.05*want {
			t.Errorf("A=%.2f: split %.2f, derived %.2f", a, ratio, want)
		}
		if d.maxHeld > 2 {
			t.Errorf("A=%.2f: the receiver held up to %d packets out of order under daps", a, d.maxHeld)
		}
		if d.heldAvg*3 > m.heldAvg {
			t.Errorf("A=%.2f: daps held %.2f packets on average, minrtt %.2f: want under a third", a, d.heldAvg, m.heldAvg)
		}
		if d.inOrder+uint64(len(paths)) < m.inOrder {
			t.Errorf("A=%.2f: daps delivered %d packets in order, minrtt %d", a, d.inOrder, m.inOrder)
		}
	}
}

// With the kernel's pushes of whole data fragments (32728 bytes) the
// layout can only be kept to a fragment, and the lead counts the slow
// path's fragment; where the delay difference is worth several fragments
// of the fast path (8 Mbit/s at 20 ms beside 4 Mbit/s at 150 ms, the
// guest test's paths) daps still holds well under half what minrtt holds.
func TestDAPSFragments(t *testing.T) {
	paths := []simPath{{rate: 1e6, rtt: 20000, cwnd: 15}, {rate: 0.5e6, rtt: 150000, cwnd: 51}}
	d := simulate(NewDAPS(Args{}), paths, 20e6, DAPSFrag)
	m := simulate(MinRTT{}, paths, 20e6, DAPSFrag)
	t.Logf("daps split %v, held avg %.1f max %d packets; minrtt split %v, held avg %.1f max %d",
		d.assigned, d.heldAvg, d.maxHeld, m.assigned, m.heldAvg, m.maxHeld)
	if d.heldAvg*2 > m.heldAvg {
		t.Errorf("daps held %.1f packets on average, minrtt %.1f: want under half", d.heldAvg, m.heldAvg)
	}
	if r := float64(d.assigned[0]) / float64(d.assigned[1]); r < 1.9 || r > 2.1 {
		t.Errorf("daps split %.2f, the rates 2", r)
	}
}
