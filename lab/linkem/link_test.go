// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"math"
	"testing"
	"time"
)

// t0 is the fake clock's origin; all link tests pass explicit times.
var t0 = time.Unix(1000, 0)

func ms(f float64) time.Time { return t0.Add(time.Duration(f * float64(time.Millisecond))) }

func newTestLink(t *testing.T, cfg DirectionConfig) *Link {
	t.Helper()
	l, err := NewLink(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustOffer(t *testing.T, l *Link, now time.Time, size int) time.Time {
	t.Helper()
	r, ok := l.Offer(now, size)
	if !ok {
		t.Fatalf("packet of %d bytes at %v dropped", size, now.Sub(t0))
	}
	return r
}

func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s: released at %v, want %v", what, got.Sub(t0), want.Sub(t0))
	}
}

func TestRateSerializesBackToBack(t *testing.T) {
	// 12 Mbit/s: a 1500-byte packet takes exactly 1 ms.
	l := newTestLink(t, DirectionConfig{Rate: 12_000_000})
	for i := 1; i <= 5; i++ {
		wantTime(t, "burst packet", mustOffer(t, l, t0, 1500), ms(float64(i)))
	}
	// Arriving while the bottleneck is busy: waits for the burst.
	wantTime(t, "queued packet", mustOffer(t, l, ms(2), 750), ms(5.5))
	// Arriving after the link went idle: starts at once.
	wantTime(t, "idle packet", mustOffer(t, l, ms(100), 1500), ms(101))
}

func TestDelayIsExact(t *testing.T) {
	l := newTestLink(t, DirectionConfig{Delay: 7 * time.Millisecond})
	for _, at := range []float64{0, 0, 0.001, 3.5, 100} {
		wantTime(t, "delayed packet", mustOffer(t, l, ms(at), 100), ms(at+7))
	}
}

func TestRateThenDelay(t *testing.T) {
	l := newTestLink(t, DirectionConfig{Rate: 12_000_000, Delay: 10 * time.Millisecond})
	wantTime(t, "first", mustOffer(t, l, t0, 1500), ms(11))
	wantTime(t, "second", mustOffer(t, l, t0, 1500), ms(12))
}

func TestQueueLimitPackets(t *testing.T) {
	l := newTestLink(t, DirectionConfig{Rate: 12_000_000, QueuePackets: 3})
	var accepted int
	for i := 0; i < 5; i++ {
		if _, ok := l.Offer(t0, 1500); ok {
			accepted++
		}
	}
	if accepted != 3 {
		t.Fatalf("accepted %d of a 5-packet burst, want 3 (queue limit)", accepted)
	}
	// After 1 ms the first packet has left, making room for exactly one.
	wantTime(t, "after room", mustOffer(t, l, ms(1), 1500), ms(4))
	if _, ok := l.Offer(ms(1), 1500); ok {
		t.Fatal("queue accepted a 4th packet")
	}
	c := l.Stats()
	if c.SentPackets != 7 || c.DroppedQueue != 3 || c.DroppedLoss != 0 {
		t.Fatalf("counters %+v, want 7 sent, 3 queue drops", c)
	}
}

func TestQueueLimitBytes(t *testing.T) {
	l := newTestLink(t, DirectionConfig{Rate: 12_000_000, QueueBytes: 4000})
	mustOffer(t, l, t0, 1500)
	mustOffer(t, l, t0, 1500)
	if _, ok := l.Offer(t0, 1500); ok {
		t.Fatal("4500 bytes accepted in a 4000-byte queue")
	}
	mustOffer(t, l, t0, 1000) // exactly 4000 fits
	if _, ok := l.Offer(t0, 1); ok {
		t.Fatal("byte beyond the limit accepted")
	}
	if got := l.Stats().DroppedQueue; got != 2 {
		t.Fatalf("DroppedQueue = %d, want 2", got)
	}
}

func TestQueueLimitNeedsBottleneck(t *testing.T) {
	// Without a rate nothing waits, so the queue never fills.
	l := newTestLink(t, DirectionConfig{QueuePackets: 1, Delay: time.Second})
	for i := 0; i < 100; i++ {
		mustOffer(t, l, t0, 1500)
	}
}

func lossPattern(t *testing.T, cfg DirectionConfig, n int) []bool {
	l := newTestLink(t, cfg)
	lost := make([]bool, n)
	for i := range lost {
		_, ok := l.Offer(ms(float64(i)), 100)
		lost[i] = !ok
	}
	if c := l.Stats(); c.SentPackets != uint64(n) || c.DroppedQueue != 0 {
		t.Fatalf("counters %+v after %d packets", c, n)
	}
	return lost
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

func TestLossRateMatches(t *testing.T) {
	const n = 200_000
	for _, p := range []float64{0.01, 0.05, 0.3} {
		for seed := uint64(1); seed <= 3; seed++ {
			got := float64(countTrue(lossPattern(t, DirectionConfig{Loss: p, Seed: seed}, n))) / n
			// 4 standard deviations of a binomial proportion.
			if tol := 4 * math.Sqrt(p*(1-p)/n); math.Abs(got-p) > tol {
				t.Errorf("loss %v seed %d: measured %.5f, want within %.5f", p, seed, got, tol)
			}
		}
	}
	if got := countTrue(lossPattern(t, DirectionConfig{Loss: 0}, 1000)); got != 0 {
		t.Errorf("loss 0 dropped %d", got)
	}
	if got := countTrue(lossPattern(t, DirectionConfig{Loss: 1}, 1000)); got != 1000 {
		t.Errorf("loss 1 dropped %d of 1000", got)
	}
}

func TestLossIsReproducible(t *testing.T) {
	a := lossPattern(t, DirectionConfig{Loss: 0.1, Seed: 42}, 10_000)
	b := lossPattern(t, DirectionConfig{Loss: 0.1, Seed: 42}, 10_000)
	c := lossPattern(t, DirectionConfig{Loss: 0.1, Seed: 43}, 10_000)
	// Jitter uses its own stream, so enabling it keeps the same drops.
	d := lossPattern(t, DirectionConfig{Loss: 0.1, Seed: 42, Jitter: time.Millisecond}, 10_000)
	same := func(x, y []bool) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("same seed gave different drops")
	}
	if same(a, c) {
		t.Error("different seeds gave identical drops")
	}
	if !same(a, d) {
		t.Error("enabling jitter changed the drops")
	}
}

func TestJitterNeverReorders(t *testing.T) {
	const delay, jitter = 10 * time.Millisecond, 5 * time.Millisecond
	l := newTestLink(t, DirectionConfig{Delay: delay, Jitter: jitter, Seed: 7})
	var prev time.Time
	offsets := map[time.Duration]bool{}
	for i := 0; i < 10_000; i++ {
		at := t0.Add(time.Duration(i) * 100 * time.Microsecond)
		r := mustOffer(t, l, at, 100)
		if r.Before(prev) {
			t.Fatalf("packet %d released at %v before the previous one at %v", i, r.Sub(t0), prev.Sub(t0))
		}
		extra := r.Sub(at) - delay
		if extra < 0 || (extra >= jitter && !r.Equal(prev)) {
			t.Fatalf("packet %d: extra delay %v outside [0, %v)", i, extra, jitter)
		}
		offsets[extra] = true
		prev = r
	}
	if len(offsets) < 1000 {
		t.Fatalf("only %d distinct delays: jitter is not random", len(offsets))
	}
}

func TestTraceDrivenRate(t *testing.T) {
	// Opportunities at 0, 0, 5 and 10 ms, then 10, 10, 15, 20, ... (the
	// trace repeats every 10 ms).
	tr := mustTrace(t, "0\n0\n5\n10\n")
	l := newTestLink(t, DirectionConfig{Trace: tr})
	for _, want := range []float64{0, 0, 5, 10, 10, 10, 15} {
		wantTime(t, "burst packet", mustOffer(t, l, t0, 1500), ms(want))
	}
	// Two half packets share one opportunity.
	l = newTestLink(t, DirectionConfig{Trace: tr})
	wantTime(t, "half 1", mustOffer(t, l, t0, 750), ms(0))
	wantTime(t, "half 2", mustOffer(t, l, t0, 750), ms(0))
	// A packet arriving after an opportunity's time cannot use its
	// leftover bytes; it waits for the next one.
	wantTime(t, "late half", mustOffer(t, l, ms(1), 750), ms(5))
	// An opportunity that finds the queue empty is lost.
	wantTime(t, "after idle", mustOffer(t, l, ms(6), 1500), ms(10))
	// A packet bigger than an opportunity needs several.
	wantTime(t, "jumbo", mustOffer(t, l, ms(11), 3000), ms(20))
	// Far in the future: the right cycle is found without replaying.
	wantTime(t, "far", mustOffer(t, l, ms(1_000_003), 1500), ms(1_000_005))

	c := l.Stats()
	if c.SentPackets != 6 || c.DroppedLoss+c.DroppedQueue != 0 {
		t.Fatalf("counters %+v", c)
	}
}

func TestTraceLongRunRate(t *testing.T) {
	// 3 opportunities every 4 ms = 9 Mbit/s; keep the link saturated with
	// 1000-byte packets for 10 s and count how many leave per second.
	tr := mustTrace(t, "1\n2\n4\n")
	if got := tr.MeanRate(); got != 9e6 {
		t.Fatalf("MeanRate = %v, want 9e6", got)
	}
	l := newTestLink(t, DirectionConfig{Trace: tr})
	var last time.Time
	const n = 11250 // 10 s at 9 Mbit/s
	for i := 0; i < n; i++ {
		last = mustOffer(t, l, t0, 1000)
	}
	if got := last.Sub(t0); got < 9990*time.Millisecond || got > 10*time.Second {
		t.Fatalf("%d packets took %v, want 10 s", n, got)
	}
}

func TestSetConfigAffectsLaterPackets(t *testing.T) {
	l := newTestLink(t, DirectionConfig{Delay: 10 * time.Millisecond})
	wantTime(t, "before", mustOffer(t, l, t0, 100), ms(10))
	if err := l.SetConfig(DirectionConfig{Delay: 2 * time.Millisecond}, ms(1)); err != nil {
		t.Fatal(err)
	}
	// A shorter delay must not overtake the packet already in flight.
	wantTime(t, "right after", mustOffer(t, l, ms(1), 100), ms(10))
	wantTime(t, "later", mustOffer(t, l, ms(20), 100), ms(22))
	if err := l.SetConfig(DirectionConfig{Loss: 2}, ms(30)); err == nil {
		t.Fatal("invalid config accepted")
	}
}

func TestValidate(t *testing.T) {
	tr := mustTrace(t, "1\n")
	bad := []DirectionConfig{
		{Rate: -1}, {Delay: -1}, {Jitter: -1}, {Loss: -0.1}, {Loss: 1.1},
		{Loss: math.NaN()}, {QueuePackets: -1}, {QueueBytes: -1}, {Rate: 1, Trace: tr},
	}
	for _, c := range bad {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := (DirectionConfig{Rate: 1e8, Delay: time.Second, Loss: 1, Trace: nil}).Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
}

func TestFifoWraps(t *testing.T) {
	var q fifo
	next, want := 0, 0
	for round := 0; round < 100; round++ {
		for i := 0; i < round%37; i++ {
			q.push(queued{size: next})
			next++
		}
		for i := 0; i < round%23 && q.len() > 0; i++ {
			if got := q.pop().size; got != want {
				t.Fatalf("popped %d, want %d", got, want)
			}
			want++
		}
	}
	if q.len() != next-want {
		t.Fatalf("len %d, want %d", q.len(), next-want)
	}
}

func TestOfferDoesNotAllocate(t *testing.T) {
	l := newTestLink(t, DirectionConfig{Rate: 100_000_000, Delay: 10 * time.Millisecond, Jitter: time.Millisecond, Loss: 0.01, QueuePackets: 1000})
	now := t0
	// Let the bottleneck queue reach its steady size first; after that the
	// per-packet path must not allocate.
	for i := 0; i < 2000; i++ {
		now = now.Add(100 * time.Microsecond)
		l.Offer(now, 1500)
	}
	allocs := testing.AllocsPerRun(10_000, func() {
		now = now.Add(100 * time.Microsecond)
		l.Offer(now, 1500)
	})
	if allocs != 0 {
		t.Fatalf("Offer allocates %v times per packet", allocs)
	}
}

// Overhead delays a packet's arrival at the queue by up to Overhead: a
// packet offered while the queue is full gets in when its overhead carries
// it past the departure ahead of it, and is dropped otherwise; without
// overhead it is always dropped. Releases never go backwards.
func TestOverheadDelaysArrivalAtQueue(t *testing.T) {
	accepted := 0
	const trials = 200
	for seed := uint64(0); seed < trials; seed++ {
		// 1500 bytes at 12 Mbit/s: 1 ms each; room for one packet.
		l := newTestLink(t, DirectionConfig{Rate: 12_000_000, QueuePackets: 1, Overhead: ms(1).Sub(t0), Seed: seed})
		first := mustOffer(t, l, t0, 1500)
		// Offered 0.5 ms after the first: it fits only if its overhead
		// exceeds the first's by 0.5 ms or more (probability 1/8).
		if r, ok := l.Offer(ms(0.5), 1500); ok {
			accepted++
			if r.Sub(first) < time.Millisecond {
				t.Fatalf("seed %d: released at %v, less than its own transmission time after the first (%v)", seed, r.Sub(t0), first.Sub(t0))
			}
		}
	}
	if accepted < trials/32 || accepted > trials/4 {
		t.Errorf("with 1 ms of overhead, %d of %d packets offered 0.5 ms after the first got in; want about 1 in 8", accepted, trials)
	}
	l := newTestLink(t, DirectionConfig{Rate: 12_000_000, QueuePackets: 1})
	mustOffer(t, l, t0, 1500)
	if _, ok := l.Offer(ms(0.5), 1500); ok {
		t.Error("without overhead a packet got into a full queue")
	}
	if err := (DirectionConfig{Overhead: -1}).Validate(); err == nil {
		t.Error("a negative overhead was accepted")
	}
}
