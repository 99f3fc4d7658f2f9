// SPDX-License-Identifier: Apache-2.0

package model

import (
	"math/rand/v2"
	"testing"
)

func TestLISARepay(t *testing.T) {
	const inf = 0x7fffffff
	cases := []struct {
		name                 string
		cwnd, ss, debt, loss uint32
		reducing             bool
		wantCwnd, wantSs     uint32
	}{
		// Congestion avoidance: the donor stays in it.
		{"avoidance", 98, 83, 49, 0, false, 49, 49},
		// Slow start (infinite ssthresh): only the window shrinks.
		{"slow start", 40, inf, 20, 0, false, 20, inf},
		// Avoidance with ssthresh already below the new window: kept.
		{"low ssthresh kept", 100, 30, 49, 0, false, 51, 30},
		// A loss entered with a debt pending (issue 13): Reno halved 100
		// to 50; the donor keeps 51, so the reduction heads for 25, not 51.
		{"loss with debt", 100, 50, 49, 100, true, 51, 25},
		// After an RTO the window is 1: it does not grow, and the target
		// shrinks by the debt's share of the loss window.
		{"rto with debt", 1, 40, 40, 80, true, 1, 20},
		// A debt as large as the window: two packets stay.
		{"debt above window", 10, 5, 30, 10, true, 2, 2},
	}
	for _, c := range cases {
		w, ss := LISARepay(c.cwnd, c.ss, c.debt, c.loss, c.reducing)
		if w != c.wantCwnd || ss != c.wantSs {
			t.Errorf("%s: LISARepay(%d, %d, debt %d, loss %d, %v) = %d, %d; want %d, %d",
				c.name, c.cwnd, c.ss, c.debt, c.loss, c.reducing, w, ss, c.wantCwnd, c.wantSs)
		}
	}
}

// Whatever the inputs, a repayment takes window away: it never grows cwnd
// and never raises ssthresh. The first version raised ssthresh to the new
// window when a loss had just halved it, undoing the reduction; this is the
// property that caught it.
func TestLISARepayNeverGives(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		cwnd := 1 + r.Uint32N(2000)
		ss := 2 + r.Uint32N(2000)
		if r.IntN(4) == 0 {
			ss = 0x7fffffff
		}
		debt := 1 + r.Uint32N(1000)
		loss := cwnd + r.Uint32N(1000)
		reducing := r.IntN(2) == 0
		w, s := LISARepay(cwnd, ss, debt, loss, reducing)
		if w > cwnd || s > ss || w < min(cwnd, 2) || s < min(ss, 2) {
			t.Fatalf("LISARepay(%d, %d, debt %d, loss %d, %v) = %d, %d", cwnd, ss, debt, loss, reducing, w, s)
		}
	}
}
