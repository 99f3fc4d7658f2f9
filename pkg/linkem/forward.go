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
type forwarder struct {
	link    *Link
	in, out *os.File
	pool    *sync.Pool
	line    chan scheduled
	stop    *atomic.Bool
	err     error // first read error that was not a shutdown; set before line closes
	observe atomic.Pointer[Observer]
}

// Observer sees every packet a direction is offered, from the reader
// goroutine, before the packet moves on: when it arrived, its bytes (valid
// only during the call), whether the link accepted it and, if so, when the
// bottleneck finishes sending it. It must be quick: the reader waits.
type Observer func(at time.Time, pkt []byte, accepted bool, depart time.Time)

func newForwarder(link *Link, in, out *os.File, pool *sync.Pool, stop *atomic.Bool) *forwarder {
	return &forwarder{
		link: link, in: in, out: out, pool: pool, stop: stop,
		line: make(chan scheduled, MaxInFlight),
	}
}

// start runs the two goroutines; wg is done when both have ended.
func (f *forwarder) start(wg *sync.WaitGroup) {
	wg.Add(2)
	go func() { defer wg.Done(); f.read() }()
	go func() { defer wg.Done(); f.write() }()
}

func (f *forwarder) read() {
	defer close(f.line) // lets the writer drain and end
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
		f.pool.Put(s.p)
	}
}
