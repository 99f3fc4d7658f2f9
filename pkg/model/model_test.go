// SPDX-License-Identifier: Apache-2.0

package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

func q32(v int64) float64 { return float64(v) / float64(One) }

func conn(paths ...Path) Conn { return Conn{Paths: paths, TargetUs: 10000} }

// Cases worked by hand from the formulas.
func TestTable(t *testing.T) {
	same := conn(Path{Cwnd: 10, SRTTUs: 50000}, Path{Cwnd: 10, SRTTUs: 50000})
	tests := []struct {
		name string
		a    Algorithm
		c    Conn
		inc  float64 // packets per ACK
	}{
		// One path: every algorithm is Reno, 1/w.
		{"lia single", LIA{}, conn(Path{Cwnd: 20, SRTTUs: 30000}), 1.0 / 20},
		{"olia single", OLIA{}, conn(Path{Cwnd: 20, SRTTUs: 30000, LossBytes: 1e6}), 1.0 / 20},
		{"balia single", BALIA{}, conn(Path{Cwnd: 20, SRTTUs: 30000}), 1.0 / 20},
		{"rsf single, no queue", RSF{}, conn(Path{Cwnd: 20, SRTTUs: 30000, MinRTTUs: 30000}), 1.0 / 20},
		// Two equal paths: LIA's alpha/w_total = (w/r^2)/(2w/r)^2 = 1/(4w) = 1/40.
		{"lia two equal", LIA{}, same, 1.0 / 40},
		// OLIA, two equal paths with equal loss history: B = M = both, alpha 0: 1/(4w).
		{"olia two equal", OLIA{}, same, 1.0 / 40},
		// BALIA, equal paths: s = m = 1/2: (4/4 + 5/4 + 1/4)/(10 w) = 2.5/100.
		{"balia two equal", BALIA{}, same, 2.5 / 100},
		// LIA is capped at 1/w_i: on a big slow path next to a small fast one
		// max_k s_k^2/w_k = (2/7)^2/2 = 0.041 exceeds 1/1000.
		{"lia cap", LIA{}, conn(Path{Cwnd: 1000, SRTTUs: 200000}, Path{Cwnd: 2, SRTTUs: 1000}), 1.0 / 1000},
		// RSF with q = d: f = 0, falls back to LIA's coupled term 1/40.
		{"rsf queue at target", RSF{}, conn(Path{Cwnd: 10, SRTTUs: 60000, MinRTTUs: 50000}, Path{Cwnd: 10, SRTTUs: 60000, MinRTTUs: 50000}), 1.0 / 40},
		// RSF with q = 2/3 d: f = (d-q)/q = 1/2: own 1/20 beats LIA's 1/40.
		{"rsf queue two thirds", RSF{}, conn(Path{Cwnd: 10, SRTTUs: 56667, MinRTTUs: 50000}, Path{Cwnd: 10, SRTTUs: 56667, MinRTTUs: 50000}), 0.5 / 10},
		// wVegas, one path: Reno, even with a queue that would cut it.
		{"wvegas single", WVegas{}, conn(Path{Cwnd: 40, SRTTUs: 100000, MinRTTUs: 50000}), 1.0 / 40},
		// Two equal paths: alpha = max(2, 10/2) = 5. w = 10, srtt 60 ms over
		// base 50 ms: diff = 10 * 10/60 = 1 < 5, +1/w.
		{"wvegas two equal, short queue", WVegas{}, conn(Path{Cwnd: 10, SRTTUs: 60000, MinRTTUs: 50000}, Path{Cwnd: 10, SRTTUs: 60000, MinRTTUs: 50000}), 1.0 / 10},
		// w = 40 at 60 ms over 50 ms: diff = 40/6 = 6 > 5, -1/w.
		{"wvegas two equal, above alpha", WVegas{}, conn(Path{Cwnd: 40, SRTTUs: 60000, MinRTTUs: 50000}, Path{Cwnd: 40, SRTTUs: 60000, MinRTTUs: 50000}), -1.0 / 40},
		// w = 30 at 60 ms over 50 ms: diff = 5 = alpha, hold.
		{"wvegas two equal, at alpha", WVegas{}, conn(Path{Cwnd: 30, SRTTUs: 60000, MinRTTUs: 50000}, Path{Cwnd: 30, SRTTUs: 60000, MinRTTUs: 50000}), 0},
		// Queue = base (srtt 100 ms over 50 ms), w = 40: diff 20 > 5, drain:
		// 1 - 50/(2*100) = 3/4 packet per ACK.
		{"wvegas drain", WVegas{}, conn(Path{Cwnd: 40, SRTTUs: 100000, MinRTTUs: 50000}, Path{Cwnd: 40, SRTTUs: 100000, MinRTTUs: 50000}), -0.75},
		// A decrease needs diff > alpha >= 2, and diff < w: a window of 3
		// or less never shrinks, however long the queue (here diff 2 = alpha).
		{"wvegas floor", WVegas{}, conn(Path{Cwnd: 3, SRTTUs: 100000, MinRTTUs: 1000}, Path{Cwnd: 300, SRTTUs: 100000, MinRTTUs: 1000}), 0},
		// The weight: at equal RTTs, windows 18 and 72 are rate shares 1/5
		// and 4/5, alpha 2 (10/5) and 7 (8, less the Q16 share's floor).
		// At a backlog of 3 packets each, the small one shrinks and the
		// large one grows: 18 * 10/60 = 3 and 72 * 2.5/60 = 3.
		{"wvegas small share", WVegas{}, conn(Path{Cwnd: 18, SRTTUs: 60000, MinRTTUs: 50000}, Path{Cwnd: 72, SRTTUs: 60000, MinRTTUs: 57500}), -1.0 / 18},
		{"wvegas large share", WVegas{}, conn(Path{Cwnd: 72, SRTTUs: 60000, MinRTTUs: 57500}, Path{Cwnd: 18, SRTTUs: 60000, MinRTTUs: 50000}), 1.0 / 72},
	}
	for _, tc := range tests {
		got := q32(tc.a.Increase(tc.c).Inc)
		if tc.inc == 0 {
			if got != 0 {
				t.Errorf("%s: increase %.6f, want 0", tc.name, got)
			}
			continue
		}
		if math.Abs(got-tc.inc) > 1e-3*math.Abs(tc.inc) {
			t.Errorf("%s: increase %.6f, want %.6f", tc.name, got, tc.inc)
		}
	}
}

// OLIA's alpha moves window from the largest-window path to the best one.
func TestOLIAAlphaSets(t *testing.T) {
	// Path 0 has the larger window, path 1 the better loss history (B\M = {1}).
	c := conn(Path{Cwnd: 40, SRTTUs: 20000, LossBytes: 1e5}, Path{Cwnd: 10, SRTTUs: 20000, LossBytes: 1e7})
	if a := q32(OLIAAlpha(c)); math.Abs(a-(-0.5)) > 1e-9 {
		t.Errorf("alpha on the max-window path = %v, want -1/(n|M|) = -0.5", a)
	}
	c.Paths[0], c.Paths[1] = c.Paths[1], c.Paths[0]
	if a := q32(OLIAAlpha(c)); math.Abs(a-0.5) > 1e-9 {
		t.Errorf("alpha on the best path = %v, want 1/(n|B\\M|) = 0.5", a)
	}
	// Best path is also the max-window path: B\M empty, alpha 0.
	c = conn(Path{Cwnd: 40, SRTTUs: 20000, LossBytes: 1e7}, Path{Cwnd: 10, SRTTUs: 20000, LossBytes: 1e5})
	if a := OLIAAlpha(c); a != 0 {
		t.Errorf("alpha = %v with B\\M empty, want 0", a)
	}
}

func TestBALIALossCut(t *testing.T) {
	// Equal paths: a = 1, cut w/2.
	c := conn(Path{Cwnd: 100, SRTTUs: 10000}, Path{Cwnd: 100, SRTTUs: 10000})
	if ss := (BALIA{}).Ssthresh(c).Ssthresh; ss != 50 {
		t.Errorf("equal paths: ssthresh %d, want 50", ss)
	}
	// A slow path (a >= 1.5): cut (w/2)*1.5, leaving w/4.
	c = conn(Path{Cwnd: 100, SRTTUs: 100000}, Path{Cwnd: 100, SRTTUs: 10000})
	if ss := (BALIA{}).Ssthresh(c).Ssthresh; ss != 25 {
		t.Errorf("slow path: ssthresh %d, want 25", ss)
	}
	// Never below 2.
	c = conn(Path{Cwnd: 3, SRTTUs: 100000}, Path{Cwnd: 100, SRTTUs: 10000})
	if ss := (BALIA{}).Ssthresh(c).Ssthresh; ss != 2 {
		t.Errorf("small window: ssthresh %d, want 2", ss)
	}
}

func randPaths(r *rand.Rand) ([]Path, []FPath) {
	n := 1 + r.IntN(MaxPaths)
	var p []Path
	var f []FPath
	for i := 0; i < n; i++ {
		w := uint32(4 + r.IntN(2000))
		rtt := uint32(500 + r.IntN(300000))
		l := uint64(r.IntN(1 << 30))
		p = append(p, Path{Cwnd: w, SRTTUs: rtt, MinRTTUs: rtt - uint32(r.IntN(int(rtt))), LossBytes: l})
		f = append(f, FPath{W: float64(w), RTT: float64(rtt) / 1e6, LossBytes: float64(l)})
	}
	return p, f
}

// tolerance bounds the fixed point's error: 0.2% relative, plus the Q16
// rounding of the acting path's share, which dominates when that share is
// tiny (s^2/w with s known to 2^-16: error about 2s/2^16/w).
func tolerance(want float64, p []Path) float64 {
	var sum float64
	for _, q := range p {
		sum += float64(q.Cwnd) / float64(q.SRTTUs)
	}
	s := float64(p[0].Cwnd) / float64(p[0].SRTTUs) / sum
	return 2e-3*math.Abs(want) + (2*s+1e-4)/65536/float64(p[0].Cwnd) + 1e-9
}

// The fixed point follows the papers' formulas within a small relative error
// over random connections of 1 to 8 paths.
func TestFixedPointMatchesFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// The error bound: shares are Q16 and squared, so about 2^-15 relative,
	// plus one Q32 unit of truncation, on increments >= 1/2000/64.
	const rel = 2e-3
	check := func(what string, got, want float64, p []Path) {
		t.Helper()
		if math.Abs(got-want) > tolerance(want, p) {
			t.Fatalf("%s: fixed %.9g, float %.9g, paths %+v", what, got, want, p)
		}
	}
	for i := 0; i < 20000; i++ {
		p, f := randPaths(r)
		c := Conn{Paths: p, TargetUs: 10000}

		inc, alpha := LIAFloat(f)
		o := LIA{}.Increase(c)
		check("lia inc", q32(o.Inc), inc, p)
		check("lia alpha", q32(o.Coupled), alpha, p)

		inc, _, a := BALIAFloat(f)
		o = BALIA{}.Increase(c)
		check("balia inc", q32(o.Inc), inc, p)
		if a < 10 { // a = m/s0 with s0 in Q16: precise only while s0 is not tiny
			check("balia a", q32(o.Coupled), a, p)
		}

		q := float64(0)
		if p[0].SRTTUs > p[0].MinRTTUs {
			q = float64(p[0].SRTTUs-p[0].MinRTTUs) / 1e6
		}
		inc, _ = RSFFloat(f, q, 0.010)
		check("rsf inc", q32(RSF{}.Increase(c).Inc), inc, p)
	}
}

// OLIA's best set compares l/rtt^2 on a scale that must order paths as the
// float does whenever they differ by more than the rounding.
func TestOLIAMatchesFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		p, f := randPaths(r)
		inc, alpha := OLIAFloat(f)
		o := OLIA{}.Increase(Conn{Paths: p})
		if q32(o.Coupled) != alpha && math.Abs(q32(o.Coupled)-alpha) > 1e-9 {
			t.Fatalf("alpha fixed %v, float %v, paths %+v", q32(o.Coupled), alpha, p)
		}
		if math.Abs(q32(o.Inc)-inc) > tolerance(inc, p) {
			t.Fatalf("inc fixed %v, float %v, paths %+v", q32(o.Inc), inc, p)
		}
	}
}

func TestAvoidStep(t *testing.T) {
	one := func(w uint32) Conn { return conn(Path{Cwnd: w, SRTTUs: 10000}) }
	// Slow start takes acked packets up to ssthresh, the rest goes to avoidance.
	st, _, used := AvoidStep(LIA{}, Subflow{Cwnd: 8, Ssthresh: 10, Clamp: 1000}, 4, one(10))
	if !used || st.Cwnd != 10 || st.Acc != 2*(One/10) {
		t.Errorf("slow start then avoidance: %+v used=%v", st, used)
	}
	// A whole window of ACKs grows Reno by one packet (floor rounding may need one more ACK).
	st = Subflow{Cwnd: 10, Ssthresh: 5, Clamp: 1000}
	for i := 0; i < 11 && st.Cwnd == 10; i++ {
		st, _, _ = AvoidStep(LIA{}, st, 1, one(st.Cwnd))
	}
	if st.Cwnd != 11 {
		t.Errorf("after a window of ACKs cwnd = %d, want 11", st.Cwnd)
	}
	// A negative increase (OLIA on the max-window path) shrinks the window.
	c := conn(Path{Cwnd: 4, SRTTUs: 20000, LossBytes: 1e3}, Path{Cwnd: 2, SRTTUs: 20000, LossBytes: 1e9})
	st = Subflow{Cwnd: 4, Ssthresh: 2, Clamp: 1000}
	for i := 0; i < 40; i++ {
		st, _, _ = AvoidStep(OLIA{}, st, 1, c)
	}
	if st.Cwnd >= 4 {
		t.Errorf("OLIA on the congested max-window path kept cwnd %d", st.Cwnd)
	}
	// The clamp holds.
	st, _, _ = AvoidStep(LIA{}, Subflow{Cwnd: 10, Ssthresh: 5, Clamp: 10, Acc: One - 1}, 10, one(10))
	if st.Cwnd != 10 {
		t.Errorf("clamp: cwnd %d, want 10", st.Cwnd)
	}
}
