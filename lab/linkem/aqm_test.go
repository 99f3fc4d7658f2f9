// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The AQM tests drive a Link (or a qdisc) on a fake clock, as the other
// Link tests do; refs are packet numbers.

// recorder is a sink that records the verdicts of a queue-mode Link with
// the Link's clock at the time.
type recorder struct {
	l       *Link
	release map[int]time.Time // packet -> release
	sentAt  map[int]time.Time // packet -> when it left the queue (clock)
	order   []int             // packets in the order they left the queue
	dropped map[int]time.Time // packet -> when it was dropped
	drops   []int
}

func (r *recorder) send(ref any, release time.Time) {
	r.release[ref.(int)] = release
	r.sentAt[ref.(int)] = r.l.clock
	r.order = append(r.order, ref.(int))
}

func (r *recorder) drop(ref any) {
	r.dropped[ref.(int)] = r.l.clock
	r.drops = append(r.drops, ref.(int))
}

func newAQMLink(t *testing.T, cfg DirectionConfig) (*Link, *recorder) {
	t.Helper()
	l := newTestLink(t, cfg)
	r := &recorder{l: l, release: map[int]time.Time{}, sentAt: map[int]time.Time{}, dropped: map[int]time.Time{}}
	l.setSink(r)
	return l, r
}

// udpPacket is an IPv4/UDP packet of size bytes from 10.0.0.1:sport to
// 10.0.0.2:9.
func udpPacket(size int, sport uint16) []byte {
	b := make([]byte, size)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(size))
	b[8], b[9] = 64, 17
	copy(b[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	binary.BigEndian.PutUint16(b[20:], sport)
	binary.BigEndian.PutUint16(b[22:], 9)
	return b
}

// The queue-mode machinery on a plain FIFO must schedule exactly as Offer
// does: same releases for the same arrivals, with rate, delay, jitter and
// overhead.
func TestQueueModeMatchesOffer(t *testing.T) {
	for _, tr := range []*Trace{nil, mustTrace(t, "1\n2\n4\n")} {
		cfg := DirectionConfig{Delay: 3 * time.Millisecond, Jitter: 200 * time.Microsecond, Overhead: 300 * time.Microsecond, Seed: 5}
		if tr != nil {
			cfg.Trace = tr
		} else {
			cfg.Rate = 12_000_000
		}
		offer := newTestLink(t, cfg)
		q, rec := newAQMLink(t, cfg)
		q.qd = &dropTail{drop: q.dropped}
		rng := rand.New(rand.NewPCG(1, 2))
		now := t0
		var want []time.Time
		for i := 0; i < 5000; i++ {
			now = now.Add(time.Duration(rng.Int64N(int64(1500 * time.Microsecond))))
			size := 100 + rng.IntN(1400)
			want = append(want, mustOffer(t, offer, now, size))
			q.Enqueue(now, make([]byte, size), i)
		}
		q.Advance(now.Add(time.Hour))
		for i, w := range want {
			if got, ok := rec.release[i]; !ok || !got.Equal(w) {
				t.Fatalf("trace %v: packet %d released at %v in queue mode, %v by Offer", tr != nil, i, got.Sub(t0), w.Sub(t0))
			}
		}
	}
}

// redAt holds RED's average queue at level packets (the queue is kept at
// that size before every arrival, long enough for the EWMA to settle) and
// returns the fraction of n arrivals it dropped early.
func redAt(t *testing.T, r *red, level, n int) float64 {
	t.Helper()
	now := t0
	for r.q.len() < level {
		r.q.push(qpkt{size: 1500})
	}
	r.avg = float64(level)
	drops := 0
	r.drop = func(_ qpkt, early bool) {
		if !early {
			t.Fatalf("limit drop at level %d", level)
		}
		drops++
	}
	for i := 0; i < n; i++ {
		now = now.Add(time.Millisecond)
		r.enqueue(now, qpkt{size: 1500})
		if r.q.len() > level {
			r.dequeue(now)
		}
	}
	return float64(drops) / float64(n)
}

// redExpected is the drop fraction RED's rule gives at a fixed p_b: after
// a drop, count restarts at 0 and packet k after it is dropped with
// probability p_b/(1-k*p_b), so a gap exceeds n packets with probability
// (1-(n+1)p_b)/(1-p_b); the fraction is one over the mean gap, about
// 2p_b/(1+p_b), and 1 from p_b = 1/2 on.
func redExpected(pb float64) float64 {
	if pb >= 1 {
		return 1
	}
	mean := 0.0
	for n := 0; ; n++ {
		s := (1 - float64(n+1)*pb) / (1 - pb)
		if s <= 0 {
			break
		}
		mean += s
	}
	return 1 / mean
}

func TestREDDropCurve(t *testing.T) {
	// min_th 5, max_th 15: RED's line to 0.1 at 15 packets, gentle to 1
	// at 30.
	cfg := DirectionConfig{Rate: 12_000_000, QueuePackets: 100, Seed: 3, AQM: AQM{Kind: RED, MinTh: 5, MaxTh: 15}}
	for _, c := range []struct {
		level int
		pb    float64
	}{
		{0, 0}, {4, 0}, {6, 0.01}, {10, 0.05}, {14, 0.09},
		{15, 0.1}, {20, 0.1 + 0.9*5/15.0}, {25, 0.1 + 0.9*10/15.0}, {29, 0.1 + 0.9*14/15.0}, {30, 1}, {40, 1},
	} {
		const n = 100_000
		r := newQdisc(cfg, nil).(*red)
		got := redAt(t, r, c.level, n)
		want := 0.0
		if c.level >= 5 {
			want = redExpected(c.pb)
		}
		// 5 standard deviations of a binomial proportion, plus a little
		// for the drops not being independent.
		tol := 5*math.Sqrt(want*(1-want)/n) + 0.002
		t.Logf("avg %2d packets: p_b %.3f, drop fraction %.4f, formula %.4f", c.level, c.pb, got, want)
		if math.Abs(got-want) > tol {
			t.Errorf("avg %d packets: drop fraction %.4f, want %.4f ± %.4f", c.level, got, want, tol)
		}
	}
}

// The gaps between RED's drops at a fixed average are uniform on
// 1..1/p_b, not geometric: none longer than 1/p_b packets.
func TestREDSpreadsDrops(t *testing.T) {
	cfg := DirectionConfig{Rate: 12_000_000, QueuePackets: 100, Seed: 9, AQM: AQM{Kind: RED, MinTh: 5, MaxTh: 15}}
	r := newQdisc(cfg, nil).(*red)
	now := t0
	for r.q.len() < 10 {
		r.q.push(qpkt{size: 1500})
	}
	r.avg = 10 // p_b 0.05: gaps of at most 20 packets
	var gaps []int
	last := 0
	for i := 1; i <= 50_000; i++ {
		now = now.Add(time.Millisecond)
		dropped := false
		r.drop = func(qpkt, bool) { dropped = true }
		r.enqueue(now, qpkt{size: 1500})
		if dropped {
			gaps = append(gaps, i-last)
			last = i
		} else {
			r.dequeue(now)
		}
	}
	hist := map[int]int{}
	for _, g := range gaps[1:] {
		if g > 20 {
			t.Fatalf("gap of %d packets between drops at p_b 0.05", g)
		}
		hist[(g-1)/5]++
	}
	// Uniform over 1..19 (the 20th has probability 0): about equal
	// counts per quarter.
	t.Logf("%d drops, gaps by fives: %v", len(gaps), hist)
	for q := 0; q < 3; q++ {
		if hist[q] < hist[0]*3/4 || hist[q] > hist[0]*5/4 {
			t.Errorf("gap histogram %v is not flat", hist)
		}
	}
}

// When a packet finds the queue empty, the average decays by (1-w_q)^m,
// m = idle time / s (s: a 1500-byte packet's transmission time).
func TestREDIdleDecay(t *testing.T) {
	cfg := DirectionConfig{Rate: 12_000_000, Seed: 1, AQM: AQM{Kind: RED}}
	r := newQdisc(cfg, func(qpkt, bool) { t.Fatal("drop") }).(*red)
	if r.s != time.Millisecond || r.minTh != 5 || r.maxTh != 15 || r.wq != 0.002 || r.maxP != 0.1 || r.limitPackets != defaultREDLimit {
		t.Fatalf("defaults: s %v min_th %v max_th %v w_q %v max_p %v limit %d", r.s, r.minTh, r.maxTh, r.wq, r.maxP, r.limitPackets)
	}
	r.enqueue(t0, qpkt{size: 1500})
	r.avg = 4
	r.dequeue(ms(1)) // empty from 1 ms
	r.enqueue(ms(301), qpkt{size: 1500})
	if want := 4 * math.Pow(0.998, 300); math.Abs(r.avg-want) > 1e-9 {
		t.Errorf("after 300 ms idle avg %v, want %v", r.avg, want)
	}
	// Not idle: the EWMA of the queue size (1 packet now).
	before := r.avg
	r.enqueue(ms(302), qpkt{size: 1500})
	if want := 0.998*before + 0.002; math.Abs(r.avg-want) > 1e-12 {
		t.Errorf("busy arrival: avg %v, want %v", r.avg, want)
	}
	// Thresholds from the limit: a sixth of it, at least 5.
	for _, c := range []struct {
		cfg      DirectionConfig
		min, max float64
	}{
		{DirectionConfig{QueuePackets: 120, AQM: AQM{Kind: RED}}, 20, 60},
		{DirectionConfig{QueueBytes: 150_000, AQM: AQM{Kind: RED}}, 100 / 6.0, 50},
		{DirectionConfig{QueuePackets: 12, AQM: AQM{Kind: RED}}, 5, 15},
	} {
		r := newQdisc(c.cfg, nil).(*red)
		if math.Abs(r.minTh-c.min) > 1e-9 || math.Abs(r.maxTh-c.max) > 1e-9 {
			t.Errorf("%+v: thresholds %v/%v, want %v/%v", c.cfg, r.minTh, r.maxTh, c.min, c.max)
		}
	}
}

// CoDel on a standing queue (RFC 8289): a 12 Mbit/s link (1 ms per
// 1500-byte packet) offered 1.25 packets per ms for 1.2 s, then 0.5 per ms.
func TestCoDelControlLaw(t *testing.T) {
	const target, interval = 5 * time.Millisecond, 100 * time.Millisecond
	l, rec := newAQMLink(t, DirectionConfig{Rate: 12_000_000, AQM: AQM{Kind: CoDel}})
	arrive := map[int]time.Time{}
	now := t0
	n := 0
	for ; now.Before(ms(1200)); now = now.Add(800 * time.Microsecond) {
		arrive[n] = now
		l.Enqueue(now, make([]byte, 1500), n)
		n++
	}
	overloadEnd := now
	for ; now.Before(ms(3000)); now = now.Add(2 * time.Millisecond) {
		arrive[n] = now
		l.Enqueue(now, make([]byte, 1500), n)
		n++
	}
	l.Advance(now.Add(time.Second))
	if len(rec.order)+len(rec.drops) != n {
		t.Fatalf("%d sent + %d dropped of %d", len(rec.order), len(rec.drops), n)
	}
	// When the sojourn time first reached target.
	var above, below time.Time
	for _, p := range rec.order {
		sojourn := rec.sentAt[p].Sub(arrive[p])
		if above.IsZero() && sojourn >= target {
			above = rec.sentAt[p]
		}
		if !above.IsZero() && below.IsZero() && rec.sentAt[p].After(overloadEnd) && sojourn < target {
			below = rec.sentAt[p]
		}
	}
	if above.IsZero() || below.IsZero() {
		t.Fatalf("sojourn never above (%v) or back below (%v) target", above, below)
	}
	drops := make([]time.Time, len(rec.drops))
	for i, p := range rec.drops {
		drops[i] = rec.dropped[p]
	}
	// No drop before the sojourn time has been above target for an
	// interval; the first at the first dequeue after that (1 ms apart).
	if d := drops[0].Sub(above); d < interval || d > interval+time.Millisecond {
		t.Fatalf("first drop %v after the sojourn reached target, want %v", d, interval)
	}
	// Then the k-th drop at the first dequeue at or after the schedule
	// S_{k+1} = S_k + interval/sqrt(k).
	sched := drops[0]
	for k := 1; k < len(drops); k++ {
		sched = sched.Add(time.Duration(float64(interval) / math.Sqrt(float64(k))))
		if drops[k].After(below) {
			t.Fatalf("drop %d at %v, after the sojourn fell below target at %v", k, drops[k].Sub(t0), below.Sub(t0))
		}
		if d := drops[k].Sub(sched); d < 0 || d > time.Millisecond {
			t.Fatalf("drop %d at %v, want within 1 ms after %v (interval/sqrt(%d) after the previous schedule)", k, drops[k].Sub(t0), sched.Sub(t0), k)
		}
	}
	if c := l.qd.(*codel); c.v.dropping {
		t.Error("still in the dropping state after the sojourn time fell below target")
	}
	st := l.Stats()
	t.Logf("%d drops from %v to %v; sojourn above target at %v, below at %v; counters %+v", len(drops), drops[0].Sub(t0), drops[len(drops)-1].Sub(t0), above.Sub(t0), below.Sub(t0), st)
	if len(drops) < 15 || st.DroppedAQM != uint64(len(drops)) || st.DroppedQueue != st.DroppedAQM {
		t.Errorf("%d drops, counters %+v: want over 15, all by CoDel", len(drops), st)
	}
}

// A short burst whose sojourn time exceeds target for less than an
// interval is not dropped.
func TestCoDelToleratesShortBurst(t *testing.T) {
	l, rec := newAQMLink(t, DirectionConfig{Rate: 12_000_000, AQM: AQM{Kind: CoDel}})
	// 90 packets at once: the last waits 89 ms, above target for about
	// 84 ms, less than the 100 ms interval.
	for i := 0; i < 90; i++ {
		l.Enqueue(t0, make([]byte, 1500), i)
	}
	l.Advance(ms(1000))
	if len(rec.drops) != 0 || len(rec.order) != 90 {
		t.Fatalf("burst of 90: %d dropped, %d sent", len(rec.drops), len(rec.order))
	}
	// 120 at once: above target for over an interval, so CoDel drops.
	l, rec = newAQMLink(t, DirectionConfig{Rate: 12_000_000, AQM: AQM{Kind: CoDel}})
	for i := 0; i < 120; i++ {
		l.Enqueue(t0, make([]byte, 1500), i)
	}
	l.Advance(ms(1000))
	if len(rec.drops) == 0 {
		t.Fatal("burst of 120 (sojourn above target for over 100 ms): no drop")
	}
}

// After leaving the dropping state, re-entering within 16 intervals starts
// from the previous episode's drop count (RFC 8289, count reuse).
func TestCoDelReusesCount(t *testing.T) {
	var v codelVars
	p := codelParams{target: 5 * time.Millisecond, interval: 100 * time.Millisecond}
	v.count, v.lastCount = 9, 3
	v.dropNext = ms(1000)
	q := &codel{p: p}
	// A queue whose head has waited long: ok to drop once first_above
	// is an interval old.
	for i := 0; i < 10; i++ {
		q.q.push(qpkt{at: t0, size: 1500})
		q.bytes += 1500
	}
	q.maxPacket = 1500
	v.firstAboveTime = ms(1100)
	drops := 0
	v.dequeue(ms(1200), p, q, q.maxPacket, func(qpkt, bool) { drops++ })
	if !v.dropping || drops != 1 || v.count != 6 {
		t.Fatalf("dropping %v, %d drops, count %d: want re-entry with count 9-3 = 6", v.dropping, drops, v.count)
	}
	if want := ms(1200).Add(time.Duration(float64(p.interval) / math.Sqrt(6))); !v.dropNext.Equal(want) {
		t.Errorf("next drop at %v, want %v", v.dropNext.Sub(t0), want.Sub(t0))
	}
}

// fqLink is a 12 Mbit/s fq_codel link (1 ms per 1500-byte packet).
func fqLink(t *testing.T, aqm AQM, limitPackets int) (*Link, *recorder) {
	aqm.Kind = FQCoDel
	return newAQMLink(t, DirectionConfig{Rate: 12_000_000, QueuePackets: limitPackets, Seed: 1, AQM: aqm})
}

// A fat flow 5% above the link's rate and a thin one (200 bytes every
// 10 ms): the thin flow loses nothing and waits at most one packet's
// time; the fat one is dropped by CoDel, which holds its queue. (An
// unresponsive flow far above the rate would outrun CoDel's control law,
// whose drop rate grows with the square root of the drops: at twice the
// rate it needs 10,000 drops, about 20 s, to match the excess.)
func TestFQCoDelIsolatesFlows(t *testing.T) {
	l, rec := fqLink(t, AQM{}, 0)
	fat, thin := udpPacket(1500, 1000), udpPacket(200, 2000)
	arrive := map[int]time.Time{}
	isThin := map[int]bool{}
	n := 0
	nextThin := t0
	for now := t0; now.Before(ms(10_000)); now = now.Add(952 * time.Microsecond) {
		arrive[n] = now
		l.Enqueue(now, fat, n)
		n++
		if !now.Before(nextThin) {
			arrive[n], isThin[n] = now, true
			l.Enqueue(now, thin, n)
			n++
			nextThin = nextThin.Add(10 * time.Millisecond)
		}
	}
	l.Advance(ms(20_000))
	var thinMax, fatLate time.Duration
	for _, p := range rec.order {
		d := rec.sentAt[p].Sub(arrive[p])
		if isThin[p] {
			thinMax = max(thinMax, d)
		} else if arrive[p].After(ms(5000)) {
			fatLate = max(fatLate, d)
		}
	}
	thinDrops, fatDrops := 0, 0
	for _, p := range rec.drops {
		if isThin[p] {
			thinDrops++
		} else {
			fatDrops++
		}
	}
	st := l.Stats()
	t.Logf("thin: %d drops, max wait %v; fat: %d drops, max wait in the last 5 s %v; counters %+v", thinDrops, thinMax, fatDrops, fatLate, st)
	if thinDrops != 0 || thinMax > time.Millisecond {
		t.Errorf("thin flow: %d drops, waited up to %v; want none and at most one packet's time", thinDrops, thinMax)
	}
	if fatDrops == 0 || st.DroppedAQM != uint64(fatDrops) {
		t.Errorf("fat flow: %d drops, counters %+v: want CoDel's drops", fatDrops, st)
	}
	// Without CoDel the fat flow's queue would grow to 500 ms by 10 s.
	if fatLate > 100*time.Millisecond {
		t.Errorf("fat flow waited up to %v in the last 5 s: CoDel does not hold its queue", fatLate)
	}
}

// A new flow's first packet leaves before the backlogged flow's queue.
func TestFQCoDelNewFlowFirst(t *testing.T) {
	l, rec := fqLink(t, AQM{}, 0)
	for i := 0; i < 50; i++ {
		l.Enqueue(t0, udpPacket(1500, 1000), i)
	}
	// At 10.5 ms the bulk flow has had its first round: it is on the old
	// list. A new flow arrives.
	l.Enqueue(ms(10.5), udpPacket(100, 3000), 100)
	l.Advance(ms(1000))
	pos := -1
	for i, p := range rec.order {
		if p == 100 {
			pos = i
		}
	}
	// Sent by 10.5 ms: packets 0..10 (11 started by then); the new one is
	// next.
	if pos != 11 {
		t.Fatalf("new flow's packet sent %dth, want 11th (right after the packet in transmission); order %v", pos, rec.order[:min(20, len(rec.order))])
	}
}

// Two backlogged flows with different packet sizes get equal byte shares.
func TestFQCoDelDRRFairness(t *testing.T) {
	l, rec := fqLink(t, AQM{Target: 5 * time.Second, Interval: 10 * time.Second}, 0) // no CoDel drops: pure DRR
	sizes := map[int]int{}
	n := 0
	for i := 0; i < 4000; i++ {
		l.Enqueue(t0, udpPacket(1500, 1000), n)
		sizes[n] = 1500
		n++
	}
	for i := 0; i < 20000; i++ {
		l.Enqueue(t0, udpPacket(300, 2000), n)
		sizes[n] = 300
		n++
	}
	// Count what left in the first 2 s (both flows backlogged all along).
	l.Advance(ms(2000))
	var big, small int
	for _, p := range rec.order {
		if sizes[p] == 1500 {
			big += 1500
		} else {
			small += 300
		}
	}
	share := float64(big) / float64(big+small)
	t.Logf("bytes sent: 1500-byte flow %d, 300-byte flow %d: share %.4f", big, small, share)
	if math.Abs(share-0.5) > 0.02 {
		t.Errorf("byte share %.4f of the 1500-byte flow, want 0.5 within 2%%", share)
	}
}

// Over the total limit, fq_codel drops from the head of the fattest queue,
// not the arriving packet.
func TestFQCoDelDropsFromFattest(t *testing.T) {
	l, rec := fqLink(t, AQM{}, 30)
	// Flow A: 20 packets, flow B: 9, all at once (the first of A leaves at
	// once, so 28 wait; the link stays busy).
	for i := 0; i < 20; i++ {
		l.Enqueue(t0, udpPacket(1500, 1000), i)
	}
	for i := 0; i < 9; i++ {
		l.Enqueue(t0, udpPacket(1500, 2000), 100+i)
	}
	if len(rec.drops) != 0 {
		t.Fatalf("drops %v below the limit", rec.drops)
	}
	// B's arrivals take the total over 30 twice: both times A's head
	// goes (packets 1 and 2; 0 is on the wire).
	for i := 9; i < 13; i++ {
		l.Enqueue(t0, udpPacket(1500, 2000), 100+i)
	}
	if len(rec.drops) != 2 || rec.drops[0] != 1 || rec.drops[1] != 2 {
		t.Fatalf("drops %v, want A's head packets 1 and 2", rec.drops)
	}
	if st := l.Stats(); st.DroppedQueue != 2 || st.DroppedAQM != 0 {
		t.Errorf("counters %+v: want 2 queue drops, none counted as early", st)
	}
}

func TestFlowHash(t *testing.T) {
	a, b := udpPacket(100, 1000), udpPacket(1400, 1000)
	if flowHash(a, 1) != flowHash(b, 1) {
		t.Error("same 5-tuple, different hashes")
	}
	c := udpPacket(100, 1001)
	if flowHash(a, 1) == flowHash(c, 1) {
		t.Error("different source ports, same hash")
	}
	// IPv6/TCP: addresses and ports.
	v6 := func(sport uint16) []byte {
		p := make([]byte, 60)
		p[0], p[6] = 0x60, 6
		p[23], p[39] = 1, 2
		binary.BigEndian.PutUint16(p[40:], sport)
		return p
	}
	if flowHash(v6(5), 1) == flowHash(v6(6), 1) || flowHash(v6(5), 1) != flowHash(v6(5), 1) {
		t.Error("IPv6 ports not hashed")
	}
	// Short or foreign packets hash without panicking.
	for _, p := range [][]byte{nil, {0x45}, make([]byte, 19), {0x60, 0}} {
		flowHash(p, 1)
	}
}

func TestAQMValidate(t *testing.T) {
	bad := []AQM{
		{Kind: "pie"}, {MinTh: 5}, {Kind: RED, Target: time.Millisecond}, {Kind: RED, MinTh: 10, MaxTh: 5},
		{Kind: RED, Wq: 2}, {Kind: RED, MaxP: -1}, {Kind: CoDel, Flows: 4}, {Kind: CoDel, Target: time.Second, Interval: time.Millisecond},
		{Kind: FQCoDel, Quantum: -1}, {Kind: CoDel, MaxP: 0.1},
	}
	for _, a := range bad {
		if err := (DirectionConfig{AQM: a}).Validate(); err == nil {
			t.Errorf("%+v accepted", a)
		} else {
			t.Log(err)
		}
	}
	for _, a := range []AQM{{}, {Kind: RED, MaxP: 0.2}, {Kind: CoDel}, {Kind: FQCoDel, Flows: 16, Quantum: 300}} {
		if err := (DirectionConfig{AQM: a}).Validate(); err != nil {
			t.Errorf("%+v rejected: %v", a, err)
		}
	}
	l := newTestLink(t, DirectionConfig{AQM: AQM{Kind: CoDel}})
	if err := l.SetConfig(DirectionConfig{AQM: AQM{Kind: RED}}, t0); err == nil {
		t.Error("SetConfig changed the AQM of a running link")
	}
	if err := l.SetConfig(DirectionConfig{AQM: AQM{Kind: CoDel}, Delay: time.Millisecond}, t0); err != nil {
		t.Errorf("SetConfig of the delay with the same AQM: %v", err)
	}
}

// Like Offer, the queue-mode path allocates nothing per packet once its
// queues have grown, whatever the AQM.
func TestEnqueueDoesNotAllocate(t *testing.T) {
	for _, kind := range []string{RED, CoDel, FQCoDel} {
		l := newTestLink(t, DirectionConfig{Rate: 100_000_000, Delay: 10 * time.Millisecond, Jitter: time.Millisecond, Loss: 0.01, QueuePackets: 1000, Seed: 1, AQM: AQM{Kind: kind}})
		l.setSink(nullSink{})
		pkts := [][]byte{udpPacket(1500, 1), udpPacket(1500, 2), udpPacket(1500, 3)}
		ref := &packet{}
		now := t0
		i := 0
		offer := func() {
			// 110% of the rate: the queue stays full and the AQM drops.
			now = now.Add(109 * time.Microsecond)
			l.Enqueue(now, pkts[i%3], ref)
			i++
		}
		for range 20_000 {
			offer()
		}
		if allocs := testing.AllocsPerRun(10_000, offer); allocs != 0 {
			t.Errorf("%s: Enqueue allocates %v times per packet", kind, allocs)
		}
	}
}
