// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"sync/atomic"
	"time"
)

// Counters is a snapshot of one direction's counters. Once the link is idle,
// SentPackets = DeliveredPackets + DroppedLoss + DroppedQueue + DroppedError.
type Counters struct {
	SentPackets, SentBytes           uint64 // offered to the link
	DeliveredPackets, DeliveredBytes uint64 // written out after the delay
	DroppedLoss                      uint64 // packets dropped by random loss
	DroppedQueue                     uint64 // packets dropped by the queue limits, its AQM or MaxInFlight
	// DroppedAQM counts the packets of DroppedQueue that an AQM chose to
	// drop (RED's early drops, CoDel's sojourn drops), as opposed to
	// drops at a full queue.
	DroppedAQM   uint64
	DroppedError uint64 // packets the kernel refused when written out
	// LateTotal and LateMax measure how much later than scheduled packets
	// were actually written: the emulator's own timing error.
	LateTotal, LateMax time.Duration
}

// MeanLate is the average release lateness per delivered packet.
func (c Counters) MeanLate() time.Duration {
	if c.DeliveredPackets == 0 {
		return 0
	}
	return c.LateTotal / time.Duration(c.DeliveredPackets)
}

// counters is the live, atomically updated form of Counters, so Stats can be
// read while the forwarding goroutines run.
type counters struct {
	sentPackets, sentBytes           atomic.Uint64
	deliveredPackets, deliveredBytes atomic.Uint64
	droppedLoss, droppedQueue        atomic.Uint64
	droppedError, droppedAQM         atomic.Uint64
	lateTotal, lateMax               atomic.Int64
}

func (c *counters) snapshot() Counters {
	return Counters{
		SentPackets:      c.sentPackets.Load(),
		SentBytes:        c.sentBytes.Load(),
		DeliveredPackets: c.deliveredPackets.Load(),
		DeliveredBytes:   c.deliveredBytes.Load(),
		DroppedLoss:      c.droppedLoss.Load(),
		DroppedQueue:     c.droppedQueue.Load(),
		DroppedError:     c.droppedError.Load(),
		DroppedAQM:       c.droppedAQM.Load(),
		LateTotal:        time.Duration(c.lateTotal.Load()),
		LateMax:          time.Duration(c.lateMax.Load()),
	}
}

func (c *counters) late(d time.Duration) {
	if d < 0 {
		d = 0
	}
	c.lateTotal.Add(int64(d))
	for {
		m := c.lateMax.Load()
		if int64(d) <= m || c.lateMax.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}
