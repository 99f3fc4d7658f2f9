// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Link is the emulation logic of one direction: it decides, when a packet
// arrives, whether it is dropped and when it must be released. It does no
// I/O and reads no clock; callers pass the arrival time, which lets tests
// drive it with a fake clock.
//
// Link is safe for concurrent use; the forwarder calls Offer from its reader
// goroutine while SetConfig and Stats may be called from others.
type Link struct {
	mu  sync.Mutex
	cfg DirectionConfig

	lossRNG     *rand.Rand
	jitterRNG   *rand.Rand
	overheadRNG *rand.Rand
	lastArrive  time.Time // arrivals (after overhead) never go below this

	// Bottleneck state. queue holds the departure time and size of every
	// accepted packet whose serialization has not ended yet.
	queue      fifo
	queueBytes int
	lastDepart time.Time // when the bottleneck finishes the last accepted packet

	// Trace state: opportunity index and the bytes still unused in it.
	traceStart time.Time
	opp        int64
	oppLeft    int

	lastRelease time.Time // releases never go below this: no reordering

	// Queue mode (an AQM, queued.go): the packets are held by qd until
	// the bottleneck takes them.
	qd      qdisc
	pending ring[qpkt] // arrivals delayed by Overhead, not at the queue yet
	clock   time.Time  // time of the last event processed
	sink    sink
	waiting bool // Advance found no event to wait for

	c counters
}

// NewLink returns a Link with the given configuration. now is the start of
// the trace, if any.
func NewLink(cfg DirectionConfig, now time.Time) (*Link, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Link{}
	l.apply(cfg, now, true)
	if cfg.AQM.Kind != DropTail {
		l.qd = newQdisc(cfg, l.dropped)
	}
	return l, nil
}

// SetConfig changes the configuration for packets arriving from now on.
// Packets already accepted keep their schedule. The PRNGs are reseeded only
// if the Seed changes, and a new or changed Trace restarts at now.
func (l *Link) SetConfig(cfg DirectionConfig, now time.Time) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if cfg.AQM != l.cfg.AQM || (l.qd != nil && (cfg.QueuePackets != l.cfg.QueuePackets || cfg.QueueBytes != l.cfg.QueueBytes)) {
		// The packets an AQM holds have no departure time yet; they
		// cannot be handed from one discipline to another.
		return fmt.Errorf("linkem: the AQM (%+v) and its limits cannot change while the link runs; start a new path", l.cfg.AQM)
	}
	l.apply(cfg, now, false)
	return nil
}

func (l *Link) apply(cfg DirectionConfig, now time.Time, first bool) {
	if first || cfg.Seed != l.cfg.Seed {
		// Separate streams, so turning jitter on does not change which
		// packets are lost.
		l.lossRNG = rand.New(rand.NewPCG(cfg.Seed, 0x6c6f7373))     // "loss"
		l.jitterRNG = rand.New(rand.NewPCG(cfg.Seed, 0x6a697474))   // "jitt"
		l.overheadRNG = rand.New(rand.NewPCG(cfg.Seed, 0x6f766864)) // "ovhd"
	}
	if cfg.Trace != nil && (first || cfg.Trace != l.cfg.Trace) {
		l.traceStart = now
		l.opp, l.oppLeft = 0, TraceMTU
	}
	l.cfg = cfg
}

// Config returns the current configuration.
func (l *Link) Config() DirectionConfig {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg
}

// Stats returns a snapshot of the counters.
func (l *Link) Stats() Counters { return l.c.snapshot() }

// Offer runs a packet of size bytes arriving at now through loss, queue and
// bottleneck. It returns whether the packet was accepted and, if so, when it
// must be delivered. Release times never decrease from one accepted packet
// to the next. Links with an AQM take Enqueue instead.
func (l *Link) Offer(now time.Time, size int) (release time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.qd != nil {
		panic("linkem: Offer on a Link with an AQM; it takes Enqueue")
	}
	l.c.sentPackets.Add(1)
	l.c.sentBytes.Add(uint64(size))

	if l.cfg.Loss > 0 && l.lossRNG.Float64() < l.cfg.Loss {
		l.c.droppedLoss.Add(1)
		return time.Time{}, false
	}

	if l.cfg.Overhead > 0 {
		now = now.Add(time.Duration(l.overheadRNG.Int64N(int64(l.cfg.Overhead))))
		if now.Before(l.lastArrive) {
			now = l.lastArrive
		}
		l.lastArrive = now
	}

	// Forget the packets whose serialization has ended by now.
	for l.queue.len() > 0 && !l.queue.front().depart.After(now) {
		l.queueBytes -= l.queue.pop().size
	}
	if (l.cfg.QueuePackets > 0 && l.queue.len()+1 > l.cfg.QueuePackets) ||
		(l.cfg.QueueBytes > 0 && l.queueBytes+size > l.cfg.QueueBytes) {
		l.c.droppedQueue.Add(1)
		return time.Time{}, false
	}

	depart := l.departure(now, size)
	l.lastDepart = depart
	if depart.After(now) {
		l.queue.push(queued{depart: depart, size: size})
		l.queueBytes += size
	}

	return l.release(depart), true
}

// departure is when the bottleneck finishes sending a packet arriving at now.
func (l *Link) departure(now time.Time, size int) time.Time {
	if l.cfg.Trace != nil {
		return l.traceDeparture(now, size)
	}
	start := now
	if l.lastDepart.After(start) {
		start = l.lastDepart // wait for the packets ahead
	}
	if l.cfg.Rate == 0 {
		return start
	}
	return start.Add(time.Duration(int64(size) * 8 * int64(time.Second) / l.cfg.Rate))
}

// traceDeparture spends delivery opportunities on the packet's bytes.
func (l *Link) traceDeparture(now time.Time, size int) time.Time {
	t := l.cfg.Trace
	if l.traceStart.Add(t.at(l.opp)).Before(now) {
		// The current opportunity passed while the queue was empty (or held
		// only packets it already carried): its leftover bytes are lost and
		// the packet waits for the next opportunity.
		l.opp = t.firstAtOrAfter(now.Sub(l.traceStart))
		l.oppLeft = TraceMTU
	}
	for need := size; need > 0; {
		if l.oppLeft == 0 {
			l.opp++
			l.oppLeft = TraceMTU
		}
		use := min(need, l.oppLeft)
		need -= use
		l.oppLeft -= use
	}
	return l.traceStart.Add(t.at(l.opp))
}

// Delivered records that a packet was written out late after its release
// time.
func (l *Link) Delivered(size int, late time.Duration) {
	l.c.deliveredPackets.Add(1)
	l.c.deliveredBytes.Add(uint64(size))
	l.c.late(late)
}

// Overflow records a packet the forwarder could not hold because
// MaxInFlight packets were already in the link. It counts as a queue drop.
func (l *Link) Overflow(size int) {
	l.c.sentPackets.Add(1)
	l.c.sentBytes.Add(uint64(size))
	l.c.droppedQueue.Add(1)
}

// WriteFailed records an accepted packet the kernel refused at delivery.
func (l *Link) WriteFailed() { l.c.droppedError.Add(1) }
