// SPDX-License-Identifier: Apache-2.0

package testkernel

import "testing"

// The bounds the integrity checks use, against the binomial tail at 77 in
// 10,000 computed apart (exact sums in Python): for 1,000 connections
// (mean 7.7) P(X >= 18) = 0.00100 and P(X >= 19) = 0.00039; for 50,
// P(X >= 3) = 0.0068 and P(X >= 4) = 0.0006.
func TestKernelFaultMax(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{0, 0}, {1, 1}, {12, 2}, {50, 3}, {100, 5}, {1000, 18}, {10000, 105},
	} {
		if got := KernelFaultMax(c.n); got != c.want {
			t.Errorf("KernelFaultMax(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}
