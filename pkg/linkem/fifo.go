// SPDX-License-Identifier: Apache-2.0

package linkem

import "time"

// queued is one packet in the bottleneck queue.
type queued struct {
	depart time.Time
	size   int
}

// fifo is a growable ring buffer: after it has grown to the largest queue
// seen, pushing and popping allocate nothing.
type fifo struct {
	buf        []queued
	head, size int
}

func (q *fifo) len() int { return q.size }

func (q *fifo) front() queued { return q.buf[q.head] }

func (q *fifo) push(v queued) {
	if q.size == len(q.buf) {
		grown := make([]queued, max(16, 2*len(q.buf)))
		for i := 0; i < q.size; i++ {
			grown[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = v
	q.size++
}

func (q *fifo) pop() queued {
	v := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return v
}
