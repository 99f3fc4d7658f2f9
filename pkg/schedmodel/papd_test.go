// SPDX-License-Identifier: Apache-2.0

package schedmodel

import "testing"

// rated is a usable subflow in congestion avoidance whose last delivery
// rate sample is units * 1024 bytes/s (mss 1024, over one second), seen
// with `delivered` dlv.
func rated(id, srtt uint32, units uint32, dlv uint64) Subflow {
	return Subflow{Id: id, Flags: Active | MemFree, SrttUs: srtt, Cwnd: 10, Ssthresh: 5,
		Mss: 1024, RateDelivered: units, RateIntervalUs: 1000000, Delivered: dlv}
}

func TestPAPDFilter(t *testing.T) {
	m := NewPAPD(Args{})
	var s State
	// A first sighting enters, whatever delivered is.
	c := conn(0, rated(1, 50000, 500, 7), rated(2, 200000, 300, 9))
	m.Send(c, &s)
	if r := PAPDRate(&s, 1); r != 500<<10 {
		t.Fatalf("rate of 1: %d, want %d", r, 500<<10)
	}
	if w := s.W[PAPDWSlot]; w != PAPDSlot(PAPDKey(1), 7, 500, 0) {
		t.Fatalf("slot 0: %#x", w)
	}
	// The max: a lower sample does not lower it, a higher one raises it.
	c.Sf[0].RateDelivered, c.Sf[0].Delivered = 400, 8
	m.Send(c, &s)
	if r := PAPDRate(&s, 1); r != 500<<10 {
		t.Errorf("after a lower sample: %d", r)
	}
	c.Sf[0].RateDelivered, c.Sf[0].Delivered = 600, 9
	m.Send(c, &s)
	if r := PAPDRate(&s, 1); r != 600<<10 {
		t.Errorf("after a higher sample: %d", r)
	}
	// A sample counts once: after the period rotates, the same delivered
	// does not re-enter it; it ages out after two rotations.
	papdRotate(&s)
	c.Sf[0].RateDelivered = 100
	m.Send(c, &s)
	if r := PAPDRate(&s, 1); r != 600<<10 {
		t.Errorf("after one rotation: %d, want the previous period's 600 units", r)
	}
	papdRotate(&s)
	m.Send(c, &s)
	if r := PAPDRate(&s, 1); r != 0 {
		t.Errorf("after two rotations with no new sample: %d, want 0", r)
	}
	// A new sample after ageing.
	c.Sf[0].Delivered = 10
	m.Send(c, &s)
	if r := PAPDRate(&s, 1); r != 100<<10 {
		t.Errorf("new sample: %d", r)
	}
	// No sample yet: no slot.
	c.Sf[1].RateIntervalUs = 0
	c.Sf = [MaxSubflows]Subflow{c.Sf[0], rated(3, 1000, 5, 1)}
	c.Sf[1].RateIntervalUs = 0
	m.Send(c, &s)
	if PAPDRate(&s, 3) != 0 {
		t.Error("a subflow without a sample got a rate")
	}
	// A subflow gone from the snapshot frees its slot (2 is gone).
	for j := 0; j < papdSlots; j++ {
		if slotKey(s.W[PAPDWSlot+j]) == PAPDKey(2) {
			t.Errorf("slot %d still holds subflow 2", j)
		}
	}
	// Saturation.
	big := rated(4, 1000, 1<<31, 1)
	big.Mss = 1 << 16
	if got := PAPDSample(&big); got != PAPDRateMax {
		t.Errorf("saturated sample: %d", got)
	}
}

// The slow-start stage marks every usable subflow with room (the kernel
// spreads new data over them); its reinjections go on every usable one.
func TestPAPDSlowStartRedundant(t *testing.T) {
	m := NewPAPD(Args{})
	var s State
	a, b, full := rated(1, 50000, 0, 0), rated(2, 200000, 0, 0), rated(3, 100000, 0, 0)
	a.Flags |= SlowStart
	a.Inflight, b.Inflight, full.Inflight = 6, 8, 10 // rooms 4096, 2048, 0
	backup := rated(4, 10000, 0, 0)
	backup.Flags |= Backup
	c := conn(1000, a, b, full, backup)
	if o := m.Send(c, &s); o != (Out{Mask: 0b011, Burst: 2048}) {
		t.Errorf("send in slow start: %+v, want subflows 0 and 1, the smaller room", o)
	}
	if s.W[PAPDWMode] != PAPDRedundant {
		t.Errorf("mode %d", s.W[PAPDWMode])
	}
	if o := m.Retrans(c, &s); o.Mask != 0b111 {
		t.Errorf("reinjection in slow start on %b, want every usable subflow (111)", o.Mask)
	}
	c.Sf[0].Inflight, c.Sf[1].Inflight = 10, 10
	if o := m.Send(c, &s); o.Mask != 0 {
		t.Errorf("every window full: %+v", o)
	}
	// No usable subflow in slow start: the stage is over, an MP period
	// begins now.
	c.Sf[0].Flags &^= SlowStart
	c.NowUs, c.SndUna = 2000, 777
	m.Send(c, &s)
	if s.W[PAPDWMode] != PAPDMP || s.W[PAPDWStart] != 2000 || s.W[PAPDWUna] != 777 || s.W[PAPDWFullCnt] != papdFullRounds {
		t.Errorf("after slow start: %v", s.W[:8])
	}
	// ...for good: slow start again (after a timeout) is congestion
	// avoidance for papd.
	c.Sf[0].Flags |= SlowStart
	m.Send(c, &s)
	if s.W[PAPDWMode] != PAPDMP {
		t.Errorf("slow start after the stage: mode %d", s.W[PAPDWMode])
	}
}

// BBR's full-pipe test ends the stage when slow start would not: three
// one-RTT_max periods in a row without 25% aggregate growth.
func TestPAPDFullPipe(t *testing.T) {
	m := NewPAPD(Args{})
	var s State
	a := rated(1, 100000, 0, 0)
	a.Flags |= SlowStart
	c := conn(0, a)
	m.Send(c, &s)
	// Aggregates per 100 ms period, bytes/s: growth, exactly 25%, then
	// 24%, 0%, 24.99% over the highest (125000): the third without 25%
	// ends the stage.
	steps := []struct {
		agg  uint64
		mode uint64
		cnt  uint64
	}{
		{100000, PAPDRedundant, 0},
		{125000, PAPDRedundant, 0}, // exactly 25%: growth
		{155000, PAPDRedundant, 1}, // 24%
		{155000, PAPDRedundant, 2},
		{156240, PAPDMP, 3},
	}
	for i, st := range steps {
		c.NowUs += 100000
		c.SndUna += st.agg / 10
		m.Send(c, &s)
		if s.W[PAPDWAgg] != st.agg || s.W[PAPDWMode] != st.mode || s.W[PAPDWFullCnt] != st.cnt {
			t.Errorf("period %d: agg %d mode %d count %d, want %d %d %d", i, s.W[PAPDWAgg], s.W[PAPDWMode], s.W[PAPDWFullCnt], st.agg, st.mode, st.cnt)
		}
	}
	// A period ends only after a whole RTT_max.
	start := s.W[PAPDWStart]
	c.NowUs += 99999
	m.Send(c, &s)
	if s.W[PAPDWStart] != start {
		t.Error("an MP period ended before arg0 * RTT_max")
	}
}

// ca returns a state in congestion avoidance, mode MP, period started at
// 0 with snd_una 0, after one decision on c (which enters c's samples).
func ca(t *testing.T, m PAPD, c *Conn) State {
	t.Helper()
	var s State
	m.Send(c, &s)
	if s.W[PAPDWMode] != PAPDMP {
		t.Fatalf("not in MP mode: %v", s.W[:8])
	}
	return s
}

// At the end of an MP period, multipath stays exactly when aggregate *
// 1024 >= T' * arg1; the best path is the one with the highest filtered
// rate.
func TestPAPDModeSwitch(t *testing.T) {
	// RTT_max 250 ms and period 4 RTT_max: one second, so the aggregate is
	// the bytes acked. T' = 500 units = 512000 bytes/s (path 2, though
	// path 1 has the lower RTT).
	const tp = 500 << 10
	cases := []struct {
		args Args
		una  uint64
		mode uint64
	}{
		{Args{}, tp, PAPDMP},
		{Args{}, tp - 1, PAPDBest},
		{Args{0, 1126}, tp*1126/1024 - 1, PAPDBest}, // 10% more needed: 563000
		{Args{0, 1126}, tp * 1126 / 1024, PAPDMP},
		{Args{0, 512}, tp / 2, PAPDMP},
		{Args{0, 512}, tp/2 - 1, PAPDBest},
		{Args{2}, tp * 2 / 4, PAPDMP}, // 2 RTT_max: half a second
	}
	for _, k := range cases {
		m := NewPAPD(k.args)
		c := conn(0, rated(1, 50000, 300, 1), rated(2, 250000, 500, 1))
		s := ca(t, m, c)
		c.NowUs = uint64(m.Period) * 250000
		c.SndUna = k.una
		c.Sf[0].Inflight = 0
		o := m.Send(c, &s)
		if s.W[PAPDWMode] != k.mode {
			t.Errorf("%v, acked %d: mode %d, want %d (agg %d, T' %d)", k.args, k.una, s.W[PAPDWMode], k.mode, s.W[PAPDWAgg], PAPDRate(&s, 2))
			continue
		}
		if k.mode == PAPDBest {
			if s.W[PAPDWBest] != 2 || o.Mask != 0b10 {
				t.Errorf("%v: best %d, sent on %b; want subflow id 2 (mask 10)", k.args, s.W[PAPDWBest], o.Mask)
			}
		} else if o.Mask != 0b01 {
			t.Errorf("%v: MP sent on %b, want minrtt's subflow 0", k.args, o.Mask)
		}
	}
}

// BEST: only the best path, nothing when its window is full; after arg2
// BEST periods an MP period re-probes, and a better aggregate keeps it.
func TestPAPDBestAndReprobe(t *testing.T) {
	m := NewPAPD(Args{0, 0, 3})
	c := conn(0, rated(1, 50000, 500, 1), rated(2, 200000, 100, 1))
	s := ca(t, m, c)
	// First MP period: aggregate 400 KB/s < T' 512000: BEST on subflow 1.
	const period = 4 * 200000
	c.NowUs, c.SndUna = period, 400000*period/1e6
	if o := m.Send(c, &s); s.W[PAPDWMode] != PAPDBest || s.W[PAPDWBest] != 1 || o.Mask != 1 {
		t.Fatalf("after a poor MP period: %v, sent %+v", s.W[:8], o)
	}
	// The best path's window full: nothing, though subflow 2 has room.
	c.Sf[0].Inflight = 10
	if o := m.Send(c, &s); o.Mask != 0 {
		t.Errorf("best path full: sent on %b", o.Mask)
	}
	// Its reinjections too go on the best path.
	if o := m.Retrans(c, &s); o.Mask != 1 {
		t.Errorf("reinjection in BEST on %b", o.Mask)
	}
	c.Sf[0].Inflight = 0
	// Three BEST periods (fresh samples keep T'), then the probe.
	for i := 1; i <= 3; i++ {
		c.NowUs += period
		c.SndUna += 500000 * period / 1e6
		c.Sf[0].Delivered++
		o := m.Send(c, &s)
		want := uint64(PAPDBest)
		if i == 3 {
			want = PAPDMP
		}
		if s.W[PAPDWMode] != want || s.W[PAPDWBestN] != uint64(i%3) {
			t.Errorf("BEST period %d: mode %d count %d", i, s.W[PAPDWMode], s.W[PAPDWBestN])
		}
		if want == PAPDMP && o.Mask != 1 {
			t.Errorf("probe: minrtt sends on %b", o.Mask)
		}
	}
	// The probe's end. During it the best path's samples were low (the
	// slow path's head-of-line blocking held it back): the max filter
	// still holds T' from the BEST period before, so an aggregate of
	// 450 KB/s loses to 512000 (with this period's samples alone, 102400,
	// it would have won); 700 KB/s wins.
	c.Sf[0].RateDelivered, c.Sf[0].Delivered = 100, c.Sf[0].Delivered+1
	c.NowUs += period
	for _, k := range []struct{ agg, mode uint64 }{{450000, PAPDBest}, {700000, PAPDMP}} {
		s, c := s, *c
		c.SndUna += k.agg * period / 1e6
		m.Send(&c, &s)
		if s.W[PAPDWMode] != k.mode || s.W[PAPDWAgg] != k.agg {
			t.Errorf("probe with aggregate %d: mode %d (agg %d), want %d", k.agg, s.W[PAPDWMode], s.W[PAPDWAgg], k.mode)
		}
	}
	// A BEST whose path is gone falls back to minrtt for the decision.
	s.W[PAPDWMode], s.W[PAPDWBest] = PAPDBest, 9
	if o := m.Send(c, &s); o.Mask != 1 {
		t.Errorf("best path gone: sent on %b, want minrtt's", o.Mask)
	}
}
