// SPDX-License-Identifier: Apache-2.0

package schedmodel

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// ecfConn: x_f (sf[0]: 10 ms, rttvar 1 ms, CWND 10, window full) and x_s
// (sf[1]: 100 ms, rttvar 5 ms, CWND 10, room), MSS 1000, and k bytes
// waiting to be sent. One x_f window is 10000 bytes; delta = 5 ms.
func ecfConn(k uint64) *Conn {
	c := mkConn(mkSF(1, 10000, 10, 10, rttVar(1000)), mkSF(2, 100000, 10, 2, rttVar(5000)))
	c.SndNxt = 1 << 30
	c.WriteSeq = c.SndNxt + k
	return c
}

// The paper's Algorithm 1 with these numbers, n = 1 + k/10000:
//
//	waiting 0: n * 10 < 105 ms     <=> k <  95000
//	waiting 1: n * 10 < 131.25 ms  <=> k < 121250
//	and then k/10000 * 100 >= 25 ms <=> k >= 2500: wait, else send on x_s.
func TestECFBoundaries(t *testing.T) {
	cases := []struct {
		name        string
		k, waiting  uint64
		send        bool
		wantWaiting uint64
	}{
		{"little waiting data: x_s, waiting kept 0", 2499, 0, true, 0},
		{"little waiting data: x_s, waiting kept 1", 2499, 1, true, 1},
		{"from k = 2500, x_f finishes first: wait", 2500, 0, false, 1},
		{"just below n*RTT_f = RTT_s + delta: wait", 94999, 0, false, 1},
		{"at n*RTT_f = RTT_s + delta: x_s, waiting 0", 95000, 0, true, 0},
		{"hysteresis: past it but waiting, wait on", 95000, 1, false, 1},
		{"hysteresis: just below (1 + beta)(RTT_s + delta)", 121249, 1, false, 1},
		{"hysteresis: at (1 + beta)(RTT_s + delta): x_s, waiting 0", 121250, 1, true, 0},
		{"much waiting data: x_s", 10 << 20, 0, true, 0},
		{"nothing waiting: x_s", 0, 0, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := State{}
			s.W[0] = tc.waiting
			o := ECF{}.Send(ecfConn(tc.k), &s)
			if tc.send && (o.Mask != 0b10 || o.Burst != 1000) {
				t.Fatalf("mask %b burst %d; want x_s for one segment", o.Mask, o.Burst)
			}
			if !tc.send && o.Mask != 0 {
				t.Fatalf("sent on %b; want a wait", o.Mask)
			}
			if s.W[0] != tc.wantWaiting {
				t.Fatalf("waiting %d, want %d", s.W[0], tc.wantWaiting)
			}
		})
	}
}

// The hysteresis over a sequence: once waiting, ECF keeps waiting until the
// backlog passes the higher threshold, then sends on x_s at the lower one.
func TestECFHysteresis(t *testing.T) {
	steps := []struct {
		k    uint64
		send bool
	}{
		{50000, false},  // wait: waiting = 1
		{110000, false}, // would send were it not waiting
		{125000, true},  // past (1+beta)(RTT_s+delta): waiting = 0
		{110000, true},  // now above the lower threshold: send
		{50000, false},  // wait again
	}
	var s State
	for i, st := range steps {
		o := ECF{}.Send(ecfConn(st.k), &s)
		if (o.Mask != 0) != st.send {
			t.Fatalf("step %d (k %d): mask %b, want send=%v", i, st.k, o.Mask, st.send)
		}
	}
}

// When x_f has room it is used, and waiting is left as it was.
func TestECFFastHasRoom(t *testing.T) {
	c := ecfConn(50000)
	c.Sf[0].Inflight = 7
	s := State{}
	s.W[0] = 1
	o := ECF{}.Send(c, &s)
	if o.Mask != 0b01 || o.Burst != 3000 || s.W[0] != 1 {
		t.Fatalf("mask %b burst %d waiting %d; want x_f for its room (3000), waiting kept", o.Mask, o.Burst, s.W[0])
	}
}

// The multiplied-out integer tests are the paper's real-valued ones (on
// the capped inputs): random cases, extreme ones included, against exact
// rationals.
func TestECFAgainstExact(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 2017))
	pick := func(small, big uint32) uint32 {
		if r.IntN(8) == 0 {
			return big - uint32(r.IntN(3))
		}
		return uint32(r.IntN(int(small)))
	}
	capU := func(v, hi, lo uint64) *big.Rat {
		return new(big.Rat).SetInt(new(big.Int).SetUint64(max(min(v, hi), lo)))
	}
	var seen [3]int // sends with waiting 0, sends with waiting 1, waits
	for i := 0; i < 200000; i++ {
		f := mkSF(1, pick(100000, ^uint32(0)), pick(300, ^uint32(0)), 0, mss(pick(9000, ^uint32(0))), rttVar(pick(50000, ^uint32(0))))
		f.Inflight = f.Cwnd
		if f.Cwnd == 0 || f.Mss == 0 {
			continue // no room, but sf_space sees none either way; nothing to weigh
		}
		s := mkSF(2, 0, pick(300, ^uint32(0)-1)+1, 0, mss(1448), rttVar(pick(50000, ^uint32(0))))
		s.SrttUs = f.SrttUs + 1 + pick(1000000, ^uint32(0)-f.SrttUs-1)
		if s.SrttUs <= f.SrttUs || s.SrttUs == ^uint32(0) {
			continue // not the pair ECF weighs (sched_lowest_rtt never picks an RTT of 2^32-1)
		}
		c := mkConn(f, s)
		c.SndNxt = uint64(r.Uint32())
		c.WriteSeq = c.SndNxt + uint64(pick(1<<22, ^uint32(0)))*uint64(1+r.IntN(4))
		waiting := uint64(r.IntN(2))
		st := State{}
		st.W[0] = waiting
		o := ECF{}.Send(c, &st)

		k := capU(c.WriteSeq-c.SndNxt, 1<<32, 0)
		mssF := capU(uint64(f.Mss), 65535, 1)
		cwndF, cwndS := capU(uint64(f.Cwnd), 65535, 1), capU(uint64(s.Cwnd), 65535, 1)
		rttF, rttS := capU(uint64(f.SrttUs), 1<<24, 0), capU(uint64(s.SrttUs), 1<<24, 0)
		delta := capU(uint64(max(f.RttvarUs, s.RttvarUs)), 1<<24, 0)
		kPkts := new(big.Rat).Quo(k, mssF)
		n := new(big.Rat).Add(big.NewRat(1, 1), new(big.Rat).Quo(kPkts, cwndF))
		lhs := new(big.Rat).Mul(n, rttF)
		rhs := new(big.Rat).Mul(new(big.Rat).Add(big.NewRat(1, 1), big.NewRat(int64(waiting), 4)), new(big.Rat).Add(rttS, delta))
		wantSend, wantWaiting := true, waiting
		if lhs.Cmp(rhs) < 0 {
			second := new(big.Rat).Mul(new(big.Rat).Quo(kPkts, cwndS), rttS)
			if second.Cmp(new(big.Rat).Add(new(big.Rat).Mul(big.NewRat(2, 1), rttF), delta)) >= 0 {
				wantSend, wantWaiting = false, 1
			}
		} else {
			wantWaiting = 0
		}
		if (o.Mask == 0b10) != wantSend || (o.Mask != 0 && o.Mask != 0b10) || st.W[0] != wantWaiting {
			t.Fatalf("case %d: mask %b waiting %d; the exact rule says send=%v waiting %d\n%+v\n%+v\nk %d", i, o.Mask, st.W[0], wantSend, wantWaiting, f, s, c.WriteSeq-c.SndNxt)
		}
		switch {
		case !wantSend:
			seen[2]++
		default:
			seen[wantWaiting]++
		}
	}
	t.Logf("sends leaving waiting 0: %d, sends keeping waiting 1: %d, waits: %d", seen[0], seen[1], seen[2])
	if min(seen[0], seen[1], seen[2]) < 1000 {
		t.Fatalf("too few cases of one outcome: %v", seen)
	}
}

// A fast subflow whose send buffer is full is still x_f: ECF waits for it
// as for one with a full window.
func TestECFFastSendBufferFull(t *testing.T) {
	c := ecfConn(50000)
	c.Sf[0].Inflight = 3
	c.Sf[0].Flags &^= MemFree
	var s State
	if o := (ECF{}).Send(c, &s); o.Mask != 0 || s.W[0] != 1 {
		t.Fatalf("mask %b waiting %d; want a wait (waiting 1)", o.Mask, s.W[0])
	}
}
