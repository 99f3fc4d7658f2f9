// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// MaxInFlight is how many packets one direction can hold at once, queued and
// delayed together. It bounds memory (MaxInFlight*MTU bytes at worst); at
// 100 Mbit/s with 1500-byte packets it is about 2 s worth of traffic.
const MaxInFlight = 16384

// packet is a reusable buffer; buffers cycle through a sync.Pool so that the
// steady state allocates nothing per packet.
type packet struct {
	buf []byte
	n   int
}

// scheduled is a packet waiting in the delay line.
type scheduled struct {
	p       *packet
	release time.Time
}

// forwarder moves packets one way: a reader goroutine takes them from in,
// asks the Link when to release them and appends them to line; a writer
// goroutine writes each to out at its release time. Release times never
// decrease, so the delay line is a plain FIFO channel, no heap.
//
// With an AQM (queued), the reader hands packets to the Link's queue
// (Link.Enqueue) and a third goroutine, the server, runs the Link's
// bottleneck at each event's time (Link.Advance); both append the packets
// leaving the bottleneck to line, under the Link's lock, so in release
// order. inflight counts the packets held by the queue or the line.
type forwarder struct {
	link    *Link
	in, out *os.File
	pool    *sync.Pool
	line    chan scheduled
	stop    *atomic.Bool
	err     error // first read error that was not a shutdown; set before line closes
	observe atomic.Pointer[Observer]

	queued   bool
	wake     chan struct{} // the reader wakes a server waiting for an event; closed when the reader ends
	inflight atomic.Int64
}

// Observer sees every packet a direction is offered, from the reader
// goroutine, before the packet moves on: when it arrived, its bytes (valid
// only during the call), whether the link accepted it and, if so, when the
// bottleneck finishes sending it. It must be quick: the reader waits.
type Observer func(at time.Time, pkt []byte, accepted bool, depart time.Time)

func newForwarder(link *Link, in, out *os.File, pool *sync.Pool, stop *atomic.Bool) *forwarder {
	f := &forwarder{
		link: link, in: in, out: out, pool: pool, stop: stop,
		line: make(chan scheduled, MaxInFlight), queued: link.Queued(),
	}
	if f.queued {
		f.wake = make(chan struct{}, 1)
		link.setSink(f)
	}
	return f
}

// threads is how many goroutines sleep on their own thread: the writer,
// and the server with an AQM.
func (f *forwarder) threads() int {
	if f.queued {
		return 2
	}
	return 1
}

// start runs the goroutines; wg is done when all have ended.
func (f *forwarder) start(wg *sync.WaitGroup) {
	wg.Add(2)
	go func() { defer wg.Done(); f.read() }()
	go func() { defer wg.Done(); f.write() }()
	if f.queued {
		wg.Add(1)
		go func() { defer wg.Done(); f.serve() }()
	}
}

func (f *forwarder) read() {
	if f.queued {
		defer close(f.wake) // the server then ends and closes the line
	} else {
		defer close(f.line) // lets the writer drain and end
	}
	for {
		p := f.pool.Get().(*packet)
		n, err := f.in.Read(p.buf)
		if err != nil {
			f.pool.Put(p)
			if !f.stop.Load() && !errors.Is(err, os.ErrClosed) {
				f.err = err
			}
			return
		}
		now := time.Now()
		if f.queued {
			f.enqueue(now, p, n)
			continue
		}
		// Only this goroutine sends, so a full channel cannot become
		// fuller between the check and the send below.
		if len(f.line) == cap(f.line) {
			f.link.Overflow(n)
			f.pool.Put(p)
			continue
		}
		release, ok := f.link.Offer(now, n)
		if obs := f.observe.Load(); obs != nil {
			(*obs)(now, p.buf[:n], ok, release.Add(-f.link.Config().Delay))
		}
		if !ok {
			f.pool.Put(p)
			continue
		}
		p.n = n
		f.line <- scheduled{p: p, release: release}
	}
}

func (f *forwarder) write() {
	lockPreciseThread()
	for s := range f.line {
		if sleepUntil(s.release, f.stop) {
			late := time.Since(s.release)
			if _, err := f.out.Write(s.p.buf[:s.p.n]); err != nil {
				f.link.WriteFailed()
			} else {
				f.link.Delivered(s.p.n, late)
			}
		}
		if f.queued {
			f.inflight.Add(-1)
		}
		f.pool.Put(s.p)
	}
}

// enqueue hands a packet read at now to a Link with an AQM.
func (f *forwarder) enqueue(now time.Time, p *packet, n int) {
	// At most MaxInFlight packets are held, so the line (of that
	// capacity) never blocks a sender.
	if f.inflight.Load() >= MaxInFlight {
		f.link.Overflow(n)
		f.pool.Put(p)
		return
	}
	p.n = n
	f.inflight.Add(1)
	ok, wake := f.link.Enqueue(now, p.buf[:n], p)
	if obs := f.observe.Load(); obs != nil {
		// The writer may be writing p by now; both only read it.
		(*obs)(now, p.buf[:n], ok, time.Time{})
	}
	if !ok {
		f.inflight.Add(-1)
		f.pool.Put(p)
	}
	if wake {
		select {
		case f.wake <- struct{}{}:
		default: // a wakeup is already pending
		}
	}
}

// serve runs the bottleneck of a Link with an AQM: it sleeps until the
// Link's next event and lets the Link process it, or waits for the reader
// when there is none.
func (f *forwarder) serve() {
	lockPreciseThread()
	defer close(f.line) // after the reader ended: nobody else sends
	for !f.stop.Load() {
		next := f.link.Advance(time.Now())
		if next.IsZero() {
			if _, ok := <-f.wake; !ok {
				return
			}
			continue
		}
		sleepUntil(next, f.stop)
	}
	for range f.wake { // the reader may still send until it ends
	}
}

// send and drop make the forwarder the Link's sink.
func (f *forwarder) send(ref any, release time.Time) {
	f.line <- scheduled{p: ref.(*packet), release: release}
}

func (f *forwarder) drop(ref any) {
	f.inflight.Add(-1)
	f.pool.Put(ref.(*packet))
}
