// SPDX-License-Identifier: Apache-2.0

package linkem

import "time"

// queued is one packet in the drop-tail bottleneck queue (Link.Offer).
type queued struct {
	depart time.Time
	size   int
}

// ring is a growable FIFO ring buffer: after it has grown to the largest
// queue seen, pushing and popping allocate nothing.
type ring[T any] struct {
	buf        []T
	head, size int
}

// fifo is drop-tail's queue of departure times.
type fifo = ring[queued]

func (q *ring[T]) len() int { return q.size }

func (q *ring[T]) front() T { return q.buf[q.head] }

func (q *ring[T]) push(v T) {
	if q.size == len(q.buf) {
		grown := make([]T, max(16, 2*len(q.buf)))
		for i := 0; i < q.size; i++ {
			grown[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = v
	q.size++
}

func (q *ring[T]) pop() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero // let a dropped reference go
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return v
}

// qpkt is one packet held by a queue discipline (a Link with an AQM).
type qpkt struct {
	at   time.Time // when it entered the queue: CoDel's timestamp
	size int       // IP bytes
	flow uint32    // 5-tuple hash, for fq_codel
	ref  any       // the caller's handle, given back by the sink
}

// qdisc is a queue discipline in front of the bottleneck of a Link with an
// AQM: the Link offers it each packet when the packet reaches the queue
// (enqueue) and asks it for the next packet whenever the bottleneck is free
// to send one (dequeue), both at their exact times on the Link's clock. It
// reports every packet it drops through its dropFunc, at enqueue or at
// dequeue. dropTail is the plain FIFO; red.go, codel.go and fqcodel.go hold
// the others.
type qdisc interface {
	enqueue(now time.Time, p qpkt)
	// dequeue returns the packet to send now, or false if none is left.
	dequeue(now time.Time) (qpkt, bool)
	len() int // packets held
}

// dropFunc receives a packet a qdisc dropped; early is true when the AQM
// chose to (RED's early drops, CoDel's sojourn drops) and false when a
// hard limit left no room.
type dropFunc func(p qpkt, early bool)

// overLimit reports whether a queue of pkts packets and bytes bytes
// exceeds the limits (0: none).
func overLimit(limitPackets, limitBytes, pkts, bytes int) bool {
	return (limitPackets > 0 && pkts > limitPackets) || (limitBytes > 0 && bytes > limitBytes)
}

// dropTail is the drop-tail FIFO as a qdisc: it drops an arriving packet
// that would take the queue over its limits. Link.Offer implements the same
// rule by departure times, without a qdisc; this form exists so the AQMs'
// cost can be measured against it on the same path (bench_test.go) and so
// the queue-mode machinery can be checked against Offer (aqm_test.go).
type dropTail struct {
	q                        ring[qpkt]
	bytes                    int
	limitPackets, limitBytes int
	drop                     dropFunc
}

func (d *dropTail) len() int { return d.q.len() }

func (d *dropTail) enqueue(_ time.Time, p qpkt) {
	if overLimit(d.limitPackets, d.limitBytes, d.q.len()+1, d.bytes+p.size) {
		d.drop(p, false)
		return
	}
	d.q.push(p)
	d.bytes += p.size
}

func (d *dropTail) dequeue(time.Time) (qpkt, bool) {
	if d.q.len() == 0 {
		return qpkt{}, false
	}
	p := d.q.pop()
	d.bytes -= p.size
	return p, true
}
