// SPDX-License-Identifier: Apache-2.0

package model

import "math"

// The formulas as the papers (and DESIGN.md section 3) write them, in
// float64, with windows in packets and RTTs in seconds. They exist to check
// the fixed point; nothing in the product uses them.

// FPath is a path for the float references.
type FPath struct {
	W, RTT    float64
	LossBytes float64
}

// LIAFloat: min(alpha / w_total, 1 / w_i),
// alpha = w_total * max_k(w_k / rtt_k^2) / (sum_k w_k / rtt_k)^2.
func LIAFloat(p []FPath) (inc, alpha float64) {
	var wtot, maxn, den float64
	for _, q := range p {
		wtot += q.W
		maxn = math.Max(maxn, q.W/(q.RTT*q.RTT))
		den += q.W / q.RTT
	}
	alpha = wtot * maxn / (den * den)
	return math.Min(alpha/wtot, 1/p[0].W), alpha
}

// OLIAFloat: (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2 + alpha_r / w_r.
func OLIAFloat(p []FPath) (inc, alpha float64) {
	n := float64(len(p))
	var den, bestM, wmax float64
	for _, q := range p {
		den += q.W / q.RTT
		bestM = math.Max(bestM, q.LossBytes/(q.RTT*q.RTT))
		wmax = math.Max(wmax, q.W)
	}
	inB := func(q FPath) bool { return q.LossBytes/(q.RTT*q.RTT) == bestM }
	inM := func(q FPath) bool { return q.W == wmax }
	var nm, nbm float64
	for _, q := range p {
		if inM(q) {
			nm++
		} else if inB(q) {
			nbm++
		}
	}
	switch {
	case nbm == 0:
	case inB(p[0]) && !inM(p[0]):
		alpha = 1 / (n * nbm)
	case inM(p[0]):
		alpha = -1 / (n * nm)
	}
	self := p[0]
	return (self.W/(self.RTT*self.RTT))/(den*den) + alpha/self.W, alpha
}

// BALIAFloat: increase (x_r/rtt_r)/(sum x)^2 * (1+a)/2 * (4+a)/5 and the
// window after a loss, w - (w/2) * min(a, 1.5), with a = max x / x_r.
func BALIAFloat(p []FPath) (inc, after, a float64) {
	var sum, xmax float64
	for _, q := range p {
		x := q.W / q.RTT
		sum += x
		xmax = math.Max(xmax, x)
	}
	self := p[0]
	xr := self.W / self.RTT
	a = xmax / xr
	inc = (xr / self.RTT) / (sum * sum) * (1 + a) / 2 * (4 + a) / 5
	after = self.W - self.W/2*math.Min(a, 1.5)
	return inc, after, a
}

// RSFFloat: max(f / w, LIA's coupled term), f = min(1, (d - q) / q) >= 0.
func RSFFloat(p []FPath, q, d float64) (inc, f float64) {
	f = 1
	if q > 0 {
		f = math.Max(0, math.Min(1, (d-q)/q))
	}
	var maxn, den float64
	for _, x := range p {
		maxn = math.Max(maxn, x.W/(x.RTT*x.RTT))
		den += x.W / x.RTT
	}
	return math.Max(f/p[0].W, maxn/(den*den)), f
}
