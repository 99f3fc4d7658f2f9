// SPDX-License-Identifier: Apache-2.0

package linkem

import "time"

// Queue mode: a Link with an AQM cannot decide a packet's departure when it
// arrives, as Offer does, because CoDel decides at dequeue and FQ-CoDel
// serves later arrivals of a sparse flow before earlier ones of a
// backlogged flow. Instead the Link runs the bottleneck as a discrete-event
// simulation on its own clock: an arriving packet enters the qdisc at its
// arrival time (after loss and overhead), and the bottleneck dequeues the
// next packet at the exact moment it is free (when the previous packet's
// serialization ends, or at the arrival itself on an idle link), sends it
// for its serialization time and releases it after the delay, as in Offer.
// Events are processed in time order whenever Enqueue or Advance is called
// with a later now; the forwarder calls Advance at the next event's time
// (a thread sleeping as the delay line's writer does), so a late wakeup
// never changes a decision, only how late the packet is handed on. Jitter,
// the trace and the release ordering are Offer's.

// sink receives the verdicts of a Link in queue mode, under the Link's
// lock: send when a packet leaves the bottleneck (to be delivered at
// release; releases never decrease), drop when the qdisc dropped it.
type sink interface {
	send(ref any, release time.Time)
	drop(ref any)
}

// Enqueue is Offer for a Link with an AQM: pkt (an IP packet, for
// fq_codel's flow hash) arrives at now, after the events due by then. It
// returns false when random loss dropped it (the caller still owns ref);
// otherwise the packet's fate reaches the sink, now or later. wake says
// that Advance last found nothing to wait for and now has an event: the
// caller must make sure Advance runs again.
func (l *Link) Enqueue(now time.Time, pkt []byte, ref any) (ok, wake bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c.sentPackets.Add(1)
	l.c.sentBytes.Add(uint64(len(pkt)))
	if l.cfg.Loss > 0 && l.lossRNG.Float64() < l.cfg.Loss {
		l.c.droppedLoss.Add(1)
		return false, false
	}
	l.advance(now)
	// The clock may be just past now if Advance ran between the caller's
	// reading of the time and this call: a packet never enters the past.
	at := now
	if at.Before(l.clock) {
		at = l.clock
	}
	if l.cfg.Overhead > 0 {
		at = at.Add(time.Duration(l.overheadRNG.Int64N(int64(l.cfg.Overhead))))
		if at.Before(l.lastArrive) {
			at = l.lastArrive
		}
		l.lastArrive = at
	}
	p := qpkt{at: at, size: len(pkt), ref: ref}
	if l.cfg.AQM.Kind == FQCoDel {
		p.flow = flowHash(pkt, l.cfg.Seed)
	}
	l.pending.push(p)
	l.advance(now)
	if l.waiting && !l.nextEvent().IsZero() {
		l.waiting = false
		wake = true
	}
	return true, wake
}

// Advance processes the events due by now and returns the time of the next
// one, or the zero time if there is none until a packet arrives.
func (l *Link) Advance(now time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advance(now)
	next := l.nextEvent()
	l.waiting = next.IsZero()
	return next
}

// nextEvent is when the bottleneck takes its next packet, or the next
// pending arrival when the queue is empty.
func (l *Link) nextEvent() time.Time {
	if l.qd.len() > 0 {
		return later(l.lastDepart, l.clock)
	}
	if l.pending.len() > 0 {
		return l.pending.front().at
	}
	return time.Time{}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// advance runs the events up to now in time order: a dequeue when the
// bottleneck is free and the queue holds packets, an arrival when a pending
// packet reaches the queue. A dequeue and an arrival at the same instant
// dequeue first, as Offer frees the queue of a packet departing at the
// moment another arrives.
func (l *Link) advance(now time.Time) {
	for {
		haveArr := l.pending.len() > 0
		if l.qd.len() > 0 {
			free := later(l.lastDepart, l.clock)
			if !free.After(now) && (!haveArr || !l.pending.front().at.Before(free)) {
				l.clock = free
				l.serve(free)
				continue
			}
		}
		if haveArr && !l.pending.front().at.After(now) {
			p := l.pending.pop()
			l.clock = p.at
			l.qd.enqueue(p.at, p)
			continue
		}
		return
	}
}

// serve lets the qdisc pick the packet the free bottleneck sends at t.
func (l *Link) serve(t time.Time) {
	p, ok := l.qd.dequeue(t)
	if !ok {
		return // the AQM dropped what was left
	}
	depart := l.departure(t, p.size)
	l.lastDepart = depart
	l.sink.send(p.ref, l.release(depart))
}

// release adds the delay and jitter to a departure, never before the
// previous release.
func (l *Link) release(depart time.Time) time.Time {
	release := depart.Add(l.cfg.Delay)
	if l.cfg.Jitter > 0 {
		release = release.Add(time.Duration(l.jitterRNG.Int64N(int64(l.cfg.Jitter))))
	}
	if release.Before(l.lastRelease) {
		release = l.lastRelease
	}
	l.lastRelease = release
	return release
}

// dropped is the qdisc's dropFunc.
func (l *Link) dropped(p qpkt, early bool) {
	l.c.droppedQueue.Add(1)
	if early {
		l.c.droppedAQM.Add(1)
	}
	l.sink.drop(p.ref)
}

// setSink sets where a queue-mode Link sends its verdicts.
func (l *Link) setSink(s sink) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sink = s
}

// Queued reports whether the Link has an AQM and so takes Enqueue.
func (l *Link) Queued() bool { return l.qd != nil }
