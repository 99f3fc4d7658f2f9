// SPDX-License-Identifier: Apache-2.0

package blocking

import (
	"math"
	"testing"
	"time"
)

// The model against every row of seed 001's "worst case model" table
// (RTT0 = 20 ms, L = 1500 B). The table prints seconds to three decimals,
// and its last digit follows neither rounding nor truncation of any one
// formula of this form exactly (50/150 at 200 ms shows 0.089 where
// rounding gives 0.090; 50/10 shows 0.091 where truncation gives 0.090),
// so each row must agree to within that 1 ms.
func TestWorstCaseSeedTable(t *testing.T) {
	rows := []struct {
		c0, c1 float64 // Mbit/s
		rtt1   int     // ms
		want   float64 // s
	}{
		{10, 10, 100, 0.040},
		{50, 10, 100, 0.041},
		{10, 50, 100, 0.039},
		{100, 100, 100, 0.040},
		{50, 150, 100, 0.039},
		{150, 50, 100, 0.040},
		{10, 10, 200, 0.090},
		{50, 10, 200, 0.091},
		{10, 50, 200, 0.089},
		{100, 100, 200, 0.090},
		{50, 150, 200, 0.089},
		{150, 50, 200, 0.090},
	}
	for _, r := range rows {
		fast := ModelPath{RateBits: r.c0 * 1e6, RTT: 20 * time.Millisecond}
		slow := ModelPath{RateBits: r.c1 * 1e6, RTT: time.Duration(r.rtt1) * time.Millisecond}
		got := WorstCase(fast, slow, SeedPacketBytes).Seconds()
		if math.Abs(got-r.want) >= 0.001 {
			t.Errorf("C0 %g C1 %g RTT1 %d ms: model %.4f s, seed %.3f s", r.c0, r.c1, r.rtt1, got, r.want)
		}
	}
}

// The three DAPS cases of seed 001: their asymmetries as the seed gives
// them, and the model's values at the seed's rates.
func TestDAPSCases(t *testing.T) {
	cases := []struct {
		c0, c1   float64 // Mbit/s
		rtt1     int     // ms
		a        float64
		maxblock time.Duration
	}{
		// (100-20)/2 + 12 ms - 12 ms
		{1, 1, 100, 5, 40 * time.Millisecond},
		// (200-20)/2
		{1, 1, 200, 10, 90 * time.Millisecond},
		// (200-20)/2 + 24 ms - 8 ms
		{1.5, 0.5, 200, 3.33, 106 * time.Millisecond},
	}
	for _, c := range cases {
		fast := ModelPath{RateBits: c.c0 * 1e6, RTT: 20 * time.Millisecond}
		slow := ModelPath{RateBits: c.c1 * 1e6, RTT: time.Duration(c.rtt1) * time.Millisecond}
		if a := Asymmetry(fast, slow); math.Abs(a-c.a) > 0.005 {
			t.Errorf("C0 %g C1 %g RTT1 %d: A = %.3f, seed %.2f", c.c0, c.c1, c.rtt1, a, c.a)
		}
		if got := WorstCase(fast, slow, SeedPacketBytes); (got - c.maxblock).Abs() > time.Microsecond {
			t.Errorf("C0 %g C1 %g RTT1 %d: model %v, want %v", c.c0, c.c1, c.rtt1, got, c.maxblock)
		}
	}
}
