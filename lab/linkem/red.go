// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"math"
	"math/rand/v2"
	"time"
)

// red is Random Early Detection (Floyd and Jacobson, "Random Early
// Detection Gateways for Congestion Avoidance", 1993, figure 2) with
// "gentle" RED (Floyd 2000): the decision is made per arriving packet from
// an average queue size, so drops are spread at random over the packets
// instead of falling on whoever arrives when the queue is full.
//
//   - avg is an EWMA of the queue size in packets with weight wq, taken at
//     each arrival; when the packet finds the queue empty, avg instead
//     decays as if m packets of transmission time s had arrived to an empty
//     queue during the idle time: avg = (1-wq)^m * avg.
//   - Below minTh nothing is dropped (count = -1). Between minTh and maxTh
//     the base probability p_b = maxP*(avg-minTh)/(maxTh-minTh) rises to
//     maxP; gentle RED continues it linearly from maxP at maxTh to 1 at
//     2*maxTh. The drop probability is p_a = p_b/(1-count*p_b), count being
//     the packets since the last drop, which makes the gaps between drops
//     nearly uniform instead of geometric. From 2*maxTh every packet is
//     dropped.
//   - A packet RED accepts is still dropped if the queue is at its hard
//     limit (not an early drop; count unchanged).
//
// The queue size counts the packets waiting, not the one being sent, as
// for a Linux qdisc.
type red struct {
	q                        ring[qpkt]
	bytes                    int
	limitPackets, limitBytes int
	minTh, maxTh, wq, maxP   float64
	s                        time.Duration // transmission time of a typical packet, from the Rate or Trace at the start
	drop                     dropFunc
	rng                      *rand.Rand

	avg       float64
	count     int
	idle      bool      // the queue is empty
	idleSince time.Time // since when (Floyd's q_time)
}

func (r *red) len() int { return r.q.len() }

func (r *red) enqueue(now time.Time, p qpkt) {
	if r.idle {
		if r.s > 0 {
			m := float64(now.Sub(r.idleSince)) / float64(r.s)
			r.avg *= math.Pow(1-r.wq, m)
		}
		r.idle = false
	} else {
		r.avg = (1-r.wq)*r.avg + r.wq*float64(r.q.len())
	}
	if r.earlyDrop() {
		r.drop(p, true)
		r.checkIdle(now)
		return
	}
	if overLimit(r.limitPackets, r.limitBytes, r.q.len()+1, r.bytes+p.size) {
		r.drop(p, false)
		return
	}
	r.q.push(p)
	r.bytes += p.size
}

// earlyDrop is figure 2's decision for one arriving packet at r.avg.
func (r *red) earlyDrop() bool {
	switch {
	case r.avg < r.minTh:
		r.count = -1
		return false
	case r.avg >= 2*r.maxTh:
		r.count = 0
		return true
	}
	r.count++
	pa := 1.0
	if pb := r.baseProb(r.avg); float64(r.count)*pb < 1 {
		pa = pb / (1 - float64(r.count)*pb)
	}
	if r.rng.Float64() < pa {
		r.count = 0
		return true
	}
	return false
}

// baseProb is p_b at an average queue of avg packets, minTh <= avg <
// 2*maxTh: RED's line up to maxTh, gentle RED's above.
func (r *red) baseProb(avg float64) float64 {
	if avg < r.maxTh {
		return r.maxP * (avg - r.minTh) / (r.maxTh - r.minTh)
	}
	return r.maxP + (1-r.maxP)*(avg-r.maxTh)/r.maxTh
}

// checkIdle starts the idle time when the queue is empty after a packet
// left or was dropped.
func (r *red) checkIdle(now time.Time) {
	if r.q.len() == 0 && !r.idle {
		r.idle, r.idleSince = true, now
	}
}

func (r *red) dequeue(now time.Time) (qpkt, bool) {
	if r.q.len() == 0 {
		return qpkt{}, false
	}
	p := r.q.pop()
	r.bytes -= p.size
	r.checkIdle(now)
	return p, true
}
