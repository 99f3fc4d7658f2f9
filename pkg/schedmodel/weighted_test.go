// SPDX-License-Identifier: Apache-2.0

package schedmodel

import (
	"math/rand/v2"
	"testing"
)

func endpoint(e uint32) sfOpt { return func(f *Subflow) { f.Endpoint = e } }

// push is the kernel's part of a run: after each send decision it pushes
// size(i) bytes on the chosen subflow (snd_nxt advances), and counts them.
type push struct {
	c     *Conn
	s     State
	bytes []uint64
	picks []int
}

func newPush(c *Conn) *push {
	c.SndNxt = 1 << 40 // a data sequence is anywhere in 64 bits
	return &push{c: c, bytes: make([]uint64, c.N), picks: make([]int, c.N)}
}

func (p *push) step(t *testing.T, m Weighted, size func(i int) uint64) int {
	t.Helper()
	o := m.Send(p.c, &p.s)
	if o.Mask == 0 {
		return -1
	}
	for i := range int(p.c.N) {
		if o.Mask == 1<<i {
			b := size(i)
			p.bytes[i] += b
			p.picks[i]++
			p.c.SndNxt += b
			return i
		}
	}
	t.Fatalf("mask %b: weighted marks one subflow", o.Mask)
	return -1
}

func (p *push) creditSum() (sum int64) {
	for k := range MaxSubflows {
		sum += slotCredit(&p.s, k)
	}
	return sum
}

// Weights 3:1 by endpoint, both subflows always able to send: decisions
// (equal pushes) and bytes (pushes of any size) split 3:1 within 2%.
func TestWeightedSplitsByWeight(t *testing.T) {
	m := Weighted{Args: Args{0, 3}} // endpoint 1 weighs 3, the rest the default 1
	c := mkConn(mkSF(1, 20000, 100, 0), mkSF(2, 20000, 100, 0, endpoint(1)))

	p := newPush(c)
	for range 4000 {
		p.step(t, m, func(int) uint64 { return 1448 })
	}
	if r := float64(p.picks[1]) / float64(p.picks[0]); r < 2.94 || r > 3.06 {
		t.Errorf("equal pushes: decisions %v, ratio %.3f, want 3 within 2%%", p.picks, r)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	p = newPush(mkConn(mkSF(1, 20000, 100, 0), mkSF(2, 20000, 100, 0, endpoint(1))))
	for range 4000 {
		p.step(t, m, func(int) uint64 { return 1 + rng.Uint64N(96<<10) })
		if s := p.creditSum(); s != 0 {
			t.Fatalf("credits sum to %d: the charge must be zero-sum", s)
		}
	}
	if r := float64(p.bytes[1]) / float64(p.bytes[0]); r < 2.94 || r > 3.06 {
		t.Errorf("pushes of 1 B to 96 KiB: bytes %v, ratio %.3f, want 3 within 2%%", p.bytes, r)
	}
}

// Three subflows, weights 1:2:5 (default, endpoint 2, endpoint 7 which has
// no arg of its own: the default), so 1:2:1 in effect.
func TestWeightedEndpointsBeyondFiveTakeTheDefault(t *testing.T) {
	m := Weighted{Args: Args{1, 0, 2}}
	if m.Weight(0) != 1 || m.Weight(2) != 2 || m.Weight(1) != 1 || m.Weight(7) != 1 {
		t.Fatalf("weights %d %d %d %d; want 1 2 1 1", m.Weight(0), m.Weight(1), m.Weight(2), m.Weight(7))
	}
	p := newPush(mkConn(mkSF(4, 1000, 100, 0), mkSF(5, 1000, 100, 0, endpoint(2)), mkSF(6, 1000, 100, 0, endpoint(7))))
	for range 4000 {
		p.step(t, m, func(int) uint64 { return 1000 })
	}
	if p.picks[0] != 1000 || p.picks[1] != 2000 || p.picks[2] != 1000 {
		t.Fatalf("picks %v, want 1000 2000 1000", p.picks)
	}
}

// A subflow without window room is skipped and the other takes the data;
// the skipped one banks no claim meanwhile, so when its window opens the
// split goes on at its weights, without a catch-up burst.
func TestWeightedSkipsAFullWindow(t *testing.T) {
	m := Weighted{Args: Args{1, 3}}
	full := mkConn(mkSF(1, 20000, 100, 0), mkSF(2, 20000, 10, 10, endpoint(1)))
	p := newPush(full)
	for range 100 {
		if i := p.step(t, m, func(int) uint64 { return 1448 }); i != 0 {
			t.Fatalf("picked sf[%d]: the weight-3 subflow has no window room", i)
		}
	}
	if slotCredit(&p.s, 0) != 0 || slotCredit(&p.s, 1) != 0 {
		t.Fatalf("credits %d, %d after 100 pushes with one subflow able to send: want 0, 0", slotCredit(&p.s, 0), slotCredit(&p.s, 1))
	}
	p.c.Sf[1].Inflight = 0
	p.picks = make([]int, 2)
	for range 400 {
		p.step(t, m, func(int) uint64 { return 1448 })
	}
	if p.picks[0] != 100 || p.picks[1] != 300 {
		t.Fatalf("after the window opened: picks %v, want 100 300", p.picks)
	}

	none := mkConn(mkSF(1, 20000, 10, 10), mkSF(2, 20000, 10, 5, notSent(5000), endpoint(1)))
	if o := m.Send(none, &State{}); o.Mask != 0 {
		t.Fatalf("mask %b with no window room anywhere: want nothing (the kernel asks again on the next ACK)", o.Mask)
	}
}

// A backup subflow takes data only when no other subflow is usable,
// whatever its weight.
func TestWeightedBackupOnlyWhenNoOtherCanSend(t *testing.T) {
	m := Weighted{Args: Args{1, 100}}
	c := mkConn(mkSF(1, 20000, 100, 0), mkSF(2, 1000, 100, 0, backup(), endpoint(1)))
	p := newPush(c)
	for range 50 {
		if i := p.step(t, m, func(int) uint64 { return 1448 }); i != 0 {
			t.Fatalf("picked sf[%d], the backup, while sf[0] can send", i)
		}
	}
	c.Sf[0].Flags &^= MemFree
	if i := p.step(t, m, func(int) uint64 { return 1448 }); i != 1 {
		t.Fatalf("picked sf[%d] with sf[0]'s send buffer full: want the backup", i)
	}
	c.Sf[0].Flags |= MemFree
	c.Sf[0].Inflight = 100
	if o := m.Send(c, &p.s); o.Mask != 0 {
		t.Fatalf("mask %b: sf[0] is usable (its window is full for now), so the backup waits", o.Mask)
	}
}

// Reinjections go to the lowest-RTT idle usable subflow, whatever the
// weights, and leave the credits alone.
func TestWeightedRetransOnLowestRTT(t *testing.T) {
	m := Weighted{Args: Args{1, 50}}
	c := mkConn(mkSF(1, 30000, 10, 0, endpoint(1)), mkSF(2, 5000, 10, 4), mkSF(3, 9000, 10, 0))
	var s State
	s.W[weightedSlot0] = 1<<32 | 77
	before := s
	if o := m.Retrans(c, &s); o.Mask != 0b100 || s != before {
		t.Fatalf("mask %b, state changed %v: want sf[2] (sf[1] has the lowest RTT but is busy) and the state kept", o.Mask, s != before)
	}
	if o := m.Retrans(mkConn(mkSF(1, 5000, 10, 0), mkSF(2, 9000, 10, 0, endpoint(1))), &s); o.Mask != 0b01 {
		t.Fatalf("mask %b: want sf[0], the lowest RTT", o.Mask)
	}
}

// A subflow that leaves frees its slot; one that joins takes a free slot
// with credit 0; a rewound snd_nxt (the kernel sends the queue again)
// charges nothing.
func TestWeightedSlotsAndRewind(t *testing.T) {
	m := Weighted{Args: Args{1, 3}}
	p := newPush(mkConn(mkSF(1, 1000, 100, 0), mkSF(2, 1000, 100, 0, endpoint(1))))
	for range 3 {
		p.step(t, m, func(int) uint64 { return 1000 })
	}
	if slotID(&p.s, 0) != 1 || slotID(&p.s, 1) != 2 || p.creditSum() != 0 || slotCredit(&p.s, 0) == 0 {
		t.Fatalf("slots %x %x: want ids 1 and 2, credits nonzero and summing to 0", p.s.W[weightedSlot0], p.s.W[weightedSlot0+1])
	}
	// sf id 1 closes, id 9 joins in its list position.
	p.c.Sf[0] = mkSF(9, 1000, 100, 0)
	before := p.c.SndNxt
	p.c.SndNxt -= 5000
	p.step(t, m, func(int) uint64 { return 0 })
	if slotID(&p.s, 0) != 9 || slotCredit(&p.s, 0) != 0 {
		t.Fatalf("slot 0: id %d credit %d, want the newcomer 9 with credit 0", slotID(&p.s, 0), slotCredit(&p.s, 0))
	}
	if p.s.W[0] != before-5000 {
		t.Fatalf("w[0] %d: want the rewound snd_nxt %d", p.s.W[0], before-5000)
	}
}

// When a subflow before it in the list closes, a subflow keeps its credit
// and its room bit at its new position.
func TestWeightedFollowsIDsNotPositions(t *testing.T) {
	var s State
	slotSet(&s, 0, 4, 500)
	slotSet(&s, 1, 7, -300)
	s.W[2] = 0b10
	c := mkConn(mkSF(7, 1000, 100, 0), mkSF(8, 1000, 100, 0))
	weightedAlign(c, &s)
	if slotID(&s, 0) != 7 || slotCredit(&s, 0) != -300 || slotID(&s, 1) != 8 || slotCredit(&s, 1) != 0 || s.W[2] != 0b01 {
		t.Fatalf("slots (%d %d) (%d %d), room %b; want (7 -300) (8 0), room 01",
			slotID(&s, 0), slotCredit(&s, 0), slotID(&s, 1), slotCredit(&s, 1), s.W[2])
	}
}

func TestNewWeighted(t *testing.T) {
	m, err := New("weighted", Args{2, 0, 7})
	if err != nil {
		t.Fatal(err)
	}
	w := m.(Weighted)
	if w.Weight(0) != 2 || w.Weight(1) != 2 || w.Weight(2) != 7 {
		t.Fatalf("weights %d %d %d, want 2 2 7", w.Weight(0), w.Weight(1), w.Weight(2))
	}
	if d := (Weighted{}).Weight(3); d != 1 {
		t.Fatalf("default weight %d, want 1", d)
	}
}
