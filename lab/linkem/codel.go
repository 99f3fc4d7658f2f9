// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"math"
	"time"
)

// codel is CoDel (RFC 8289) on one FIFO: it timestamps packets as they
// enter and decides at dequeue, from each packet's sojourn time, following
// the RFC's pseudocode (section 5) line by line; codelVars holds the state,
// shared with fq_codel's per-flow queues.
//
// Dequeue happens on the Link's clock at the exact moment the bottleneck is
// free for the next packet (the end of the previous packet's serialization,
// or the packet's arrival when the link is idle), so the sojourn time is
// the time from entering the queue to reaching the serializer, as in the
// RFC, and the backlog test sees the packets that have arrived by then.
type codel struct {
	q                        ring[qpkt]
	bytes                    int
	limitPackets, limitBytes int
	p                        codelParams
	v                        codelVars
	maxPacket                int // the RFC's maxpacket_: the largest packet seen
	drop                     dropFunc
}

type codelParams struct{ target, interval time.Duration }

// codelVars is the RFC's per-queue state. A zero time is the RFC's 0.
type codelVars struct {
	count, lastCount int
	dropping         bool
	dropNext         time.Time
	firstAboveTime   time.Time
}

// codelQueue is the queue CoDel manages: pop removes the head packet (and
// its bytes), backlog is the bytes left.
type codelQueue interface {
	pop() (qpkt, bool)
	backlog() int
}

func (c *codel) len() int { return c.q.len() }

func (c *codel) enqueue(now time.Time, p qpkt) {
	if overLimit(c.limitPackets, c.limitBytes, c.q.len()+1, c.bytes+p.size) {
		c.drop(p, false)
		return
	}
	c.maxPacket = max(c.maxPacket, p.size)
	p.at = now
	c.q.push(p)
	c.bytes += p.size
}

func (c *codel) pop() (qpkt, bool) {
	if c.q.len() == 0 {
		return qpkt{}, false
	}
	p := c.q.pop()
	c.bytes -= p.size
	return p, true
}

func (c *codel) backlog() int { return c.bytes }

func (c *codel) dequeue(now time.Time) (qpkt, bool) {
	return c.v.dequeue(now, c.p, c, c.maxPacket, c.drop)
}

// controlLaw is the RFC's control_law: the next drop interval/sqrt(count)
// after t.
func (p codelParams) controlLaw(t time.Time, count int) time.Time {
	return t.Add(time.Duration(float64(p.interval) / math.Sqrt(float64(count))))
}

// doDequeue is the RFC's dodequeue: the head packet and whether CoDel may
// drop it (the sojourn time has been at or above target for an interval
// and more than a packet's worth of bytes is left).
func (v *codelVars) doDequeue(now time.Time, p codelParams, q codelQueue, maxPacket int) (qpkt, bool, bool) {
	pkt, ok := q.pop()
	if !ok {
		v.firstAboveTime = time.Time{}
		return pkt, false, false
	}
	okToDrop := false
	if now.Sub(pkt.at) < p.target || q.backlog() <= maxPacket {
		v.firstAboveTime = time.Time{}
	} else if v.firstAboveTime.IsZero() {
		v.firstAboveTime = now.Add(p.interval)
	} else if !now.Before(v.firstAboveTime) {
		okToDrop = true
	}
	return pkt, true, okToDrop
}

// dequeue is the RFC's dequeue.
func (v *codelVars) dequeue(now time.Time, p codelParams, q codelQueue, maxPacket int, drop dropFunc) (qpkt, bool) {
	pkt, ok, okToDrop := v.doDequeue(now, p, q, maxPacket)
	if v.dropping {
		if !okToDrop {
			// Sojourn time below target: leave the dropping state.
			v.dropping = false
		}
		for !now.Before(v.dropNext) && v.dropping {
			drop(pkt, true)
			v.count++
			pkt, ok, okToDrop = v.doDequeue(now, p, q, maxPacket)
			if !okToDrop {
				v.dropping = false
			} else {
				v.dropNext = p.controlLaw(v.dropNext, v.count)
			}
		}
	} else if okToDrop {
		drop(pkt, true)
		pkt, ok, _ = v.doDequeue(now, p, q, maxPacket)
		v.dropping = true
		// Re-entering soon after leaving: start from the drop rate that
		// controlled the queue last time rather than from 1.
		delta := v.count - v.lastCount
		v.count = 1
		if delta > 1 && now.Sub(v.dropNext) < 16*p.interval {
			v.count = delta
		}
		v.dropNext = p.controlLaw(now, v.count)
		v.lastCount = v.count
	}
	return pkt, ok
}
