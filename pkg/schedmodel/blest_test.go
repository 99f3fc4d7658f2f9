// SPDX-License-Identifier: Apache-2.0

package schedmodel

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// blestConn: x_f (sf[0], 10 ms, window full) and x_s (sf[1], rttS, room),
// MSS 1448 on both, a receive window of sw bytes from snd_una.
func blestConn(rttS, cwndF, inflightS, queuedS uint32, sw uint64) *Conn {
	c := mkConn(
		mkSF(1, 10000, cwndF, cwndF, mss(1448)),
		mkSF(2, rttS, 10, inflightS, mss(1448), notSent(queuedS)),
	)
	c.SndUna, c.SndNxt, c.WriteSeq = 1<<20, 1<<20+50000, 1<<22
	c.WndEnd = c.SndUna + sw
	return c
}

// The paper's rule with numbers where its real arithmetic is exact:
// r = 10, CWND_f = 10: X = 1448 * (10 + 4.5) * 10 = 209960 bytes; with
// lambda 1.2, x_s is skipped while SW - 1448 * (inflight_s + 1) - queued_s
// < 1.2 * 209960 = 251952.
func TestBLESTBoundary(t *testing.T) {
	const x = 209960
	if got := blestFastBytes(&blestConn(100000, 10, 0, 0, 0).Sf[0], &blestConn(100000, 10, 0, 0, 0).Sf[1]); got != x {
		t.Fatalf("X = %d, want %d", got, x)
	}
	cases := []struct {
		name      string
		lambda    uint32
		inflightS uint32
		queuedS   uint32
		sw        uint64
		wait      bool
	}{
		{"room exactly X*lambda: send", 120, 0, 0, 251952 + 1448, false},
		{"one byte less: wait", 120, 0, 0, 251952 + 1448 - 1, true},
		{"a window far larger: send", 120, 0, 0, 4 << 20, false},
		{"a small window: wait", 120, 0, 0, 64 << 10, true},
		{"x_s's packets in flight count against the window", 120, 3, 0, 251952 + 4*1448 - 1, true},
		{"...and with that much more window: send", 120, 3, 0, 251952 + 4*1448, false},
		{"bytes queued on x_s count too", 120, 0, 5000, 251952 + 1448 + 4999, true},
		{"lambda 1.0: the boundary is X itself", 100, 0, 0, x + 1448, false},
		{"lambda 1.0, one byte less", 100, 0, 0, x + 1448 - 1, true},
		{"a window smaller than what x_s holds: wait", 120, 100, 0, 1000, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := blestConn(100000, 10, tc.inflightS, tc.queuedS, tc.sw)
			o := BLEST{Lambda: tc.lambda}.Send(c, &State{})
			if tc.wait && o.Mask != 0 {
				t.Fatalf("sent on %b; want a wait", o.Mask)
			}
			if !tc.wait && (o.Mask != 0b10 || o.Burst != 1448) {
				t.Fatalf("mask %b burst %d; want x_s for one segment", o.Mask, o.Burst)
			}
		})
	}
}

// Where the paper's rule has nothing to weigh, BLEST is minrtt.
func TestBLESTLikeMinRTT(t *testing.T) {
	cases := []struct {
		name  string
		c     *Conn
		mask  uint32
		burst uint32
	}{
		{"x_f has room: x_f, for its room", mkConn(mkSF(1, 10000, 10, 6), mkSF(2, 100000, 10, 0)), 0b01, 4000},
		{"no subflow has room", mkConn(mkSF(1, 10000, 10, 10), mkSF(2, 100000, 10, 10)), 0, 0},
		{"the one with room is as fast", mkConn(mkSF(1, 10000, 10, 10), mkSF(2, 10000, 10, 8)), 0b10, 2000},
		{"nothing usable", mkConn(mkSF(1, 10000, 10, 0, bufferFull())), 0, 0},
		{"x_f established but its send buffer full, nothing else", mkConn(mkSF(1, 10000, 10, 0, bufferFull()), mkSF(2, 100000, 10, 10)), 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.WndEnd = 1000 // a window that would make BLEST wait, were it asked
			o := BLEST{Lambda: 120}.Send(tc.c, &State{})
			if o.Mask != tc.mask || (o.Mask != 0 && o.Burst != tc.burst) {
				t.Fatalf("mask %b burst %d; want mask %b burst %d", o.Mask, o.Burst, tc.mask, tc.burst)
			}
			if m := (MinRTT{}).Send(tc.c, &State{}); m.Mask != o.Mask {
				t.Fatalf("minrtt chose %b, blest %b", m.Mask, o.Mask)
			}
		})
	}
}

// A larger RTT ratio means more bytes from x_f during one RTT of x_s, so
// for a fixed window BLEST switches from sending to waiting exactly once
// as the slow RTT grows, and never back.
func TestBLESTMonotoneInRTTRatio(t *testing.T) {
	waited := false
	for rttS := uint32(10001); rttS < 2000000; rttS += 997 {
		o := BLEST{Lambda: 120}.Send(blestConn(rttS, 20, 2, 0, 300000), &State{})
		if o.Mask == 0 {
			waited = true
		} else if waited {
			t.Fatalf("RTT_s %d us: sent after waiting at a smaller RTT_s", rttS)
		}
	}
	if !waited {
		t.Fatal("never waited")
	}
}

// The fixed point agrees with the paper's real arithmetic except within
// its truncation error, and never overflows: random subflows, extreme ones
// included, checked against exact rationals.
func TestBLESTAgainstExact(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2016))
	pick := func(small, big uint32) uint32 {
		if r.IntN(8) == 0 {
			return big - uint32(r.IntN(3))
		}
		return 1 + uint32(r.IntN(int(small)))
	}
	var checked [2]int // sends, waits compared with the exact rule
	for i := 0; i < 200000; i++ {
		f := mkSF(1, pick(200000, ^uint32(0)), pick(500, ^uint32(0)), 0, mss(pick(9000, ^uint32(0))))
		f.Inflight = f.Cwnd
		s := mkSF(2, 0, 10, pick(500, ^uint32(0)-1), mss(pick(9000, ^uint32(0))), notSent(pick(1<<20, ^uint32(0))))
		s.Cwnd = s.Inflight + 1
		s.SrttUs = f.SrttUs + pick(2000000, ^uint32(0)-f.SrttUs)
		if s.SrttUs <= f.SrttUs || s.SrttUs == ^uint32(0) || space(&s) == 0 {
			continue // not the pair BLEST weighs (no room, or never the lowest RTT)
		}
		c := mkConn(f, s)
		c.SndUna = uint64(r.Uint32())
		c.WndEnd = c.SndUna + uint64(pick(1<<24, ^uint32(0)))*uint64(1+r.IntN(300))
		lambda := pick(300, 65535)
		got := BLEST{Lambda: lambda}.Send(c, &State{}).Mask == 0

		// Exact: X = MSS_f * (CWND_f + (r-1)/2) * r, the fields capped as
		// the fixed point caps them.
		mssF, cwndF, mssS := min(f.Mss, 65535), min(f.Cwnd, 65535), min(s.Mss, 65535)
		ratio := new(big.Rat).SetFrac64(int64(s.SrttUs), int64(f.SrttUs))
		if ratio.Cmp(big.NewRat(64, 1)) > 0 {
			ratio = big.NewRat(64, 1)
		}
		half := new(big.Rat).Quo(new(big.Rat).Sub(ratio, big.NewRat(1, 1)), big.NewRat(2, 1))
		x := new(big.Rat).Mul(new(big.Rat).Add(new(big.Rat).SetInt64(int64(cwndF)), half), ratio)
		x.Mul(x, new(big.Rat).SetInt64(int64(mssF)))
		lhs := new(big.Rat).Mul(x, new(big.Rat).SetInt64(int64(lambda)))
		held := (uint64(s.Inflight)+1)*uint64(mssS) + uint64(s.Notsent)
		sw := c.WndEnd - c.SndUna
		var room uint64
		if sw > held {
			room = min(sw-held, 1<<40)
		}
		rhs := new(big.Rat).SetInt(new(big.Int).Mul(new(big.Int).SetUint64(room), big.NewInt(100)))
		// Truncation: r loses < 1/1024, (r-1)/2 and each shift < 1 unit of
		// the last place: X is low by at most MSS_f * (CWND_f + 66) * 2/1024 + 2.
		errX := float64(mssF)*(float64(cwndF)+66)*2/1024 + 2
		margin, _ := new(big.Rat).Sub(lhs, rhs).Float64()
		if margin > errX*float64(lambda) || margin <= 0 {
			want := margin > 0
			if want {
				checked[1]++
			} else {
				checked[0]++
			}
			if got != want {
				t.Fatalf("case %d: BLEST waits=%v, exact rule says %v (X*lambda - room*100 = %.0f)\n%+v\n%+v\nsw %d lambda %d", i, got, want, margin, f, s, sw, lambda)
			}
		}
	}
	t.Logf("compared with the exact rule: %d sends, %d waits", checked[0], checked[1])
	if checked[0] < 1000 || checked[1] < 1000 {
		t.Fatalf("too few cases on one side of the rule: %v", checked)
	}
}

// A fast subflow whose send buffer is full is still x_f: the slower one is
// weighed against waiting for it (minrtt, which does not see it, sends on
// the slow one).
func TestBLESTFastSendBufferFull(t *testing.T) {
	c := blestConn(100000, 10, 0, 0, 64<<10)
	c.Sf[0].Inflight = 2 // room in its window, but...
	c.Sf[0].Flags &^= MemFree
	if o := (BLEST{Lambda: 120}).Send(c, &State{}); o.Mask != 0 {
		t.Fatalf("sent on %b; want a wait for x_f", o.Mask)
	}
	if o := (MinRTT{}).Send(c, &State{}); o.Mask != 0b10 {
		t.Fatalf("minrtt sent on %b; the case assumes it takes the slow one", o.Mask)
	}
	c.WndEnd = c.SndUna + 4<<20
	if o := (BLEST{Lambda: 120}).Send(c, &State{}); o.Mask != 0b10 {
		t.Fatalf("with a large window, mask %b; want x_s", o.Mask)
	}
}

// Backups stay out of the pair while a non-backup subflow is usable.
func TestBLESTBackupNotFast(t *testing.T) {
	c := blestConn(100000, 10, 0, 0, 64<<10)
	c.N = 3
	c.Sf[2] = mkSF(3, 1000, 10, 0, backup(), mss(1448))
	if o := (BLEST{Lambda: 120}).Send(c, &State{}); o.Mask != 0 {
		t.Fatalf("mask %b: the fast backup must not be x_f nor used; want the wait of the two-subflow case", o.Mask)
	}
}
