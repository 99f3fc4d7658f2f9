// SPDX-License-Identifier: Apache-2.0

package pathctl

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

var (
	pathA = SubflowID{netip.MustParseAddrPort("10.0.0.1:1000"), netip.MustParseAddrPort("10.1.0.1:80")}
	pathB = SubflowID{netip.MustParseAddrPort("10.0.1.1:1001"), netip.MustParseAddrPort("10.1.0.1:80")}
)

// fakeNet is a recorded series made on the fly: each step the connection
// gains the goodput its current mode gets, split as the mode splits it, and
// each path reports its delivery rate.
type fakeNet struct {
	t0     time.Time
	step   int
	acked  map[SubflowID]uint64
	rateA  uint64 // delivery rate of each path alone, bytes/s
	rateB  uint64
	mp     uint64 // goodput in multipath mode, bytes/s
	app    uint64 // the application's rate, bytes/s (0: unlimited)
	ramp   int    // steps of slow start: multipath goodput grows to mp over them
	period time.Duration
}

func newFakeNet(rateA, rateB, mp uint64) *fakeNet {
	return &fakeNet{t0: time.Unix(1000, 0), acked: map[SubflowID]uint64{}, rateA: rateA, rateB: rateB, mp: mp, period: 500 * time.Millisecond}
}

// next returns the sample at the end of a step run under decision d.
func (f *fakeNet) next(d Decision) Sample {
	f.step++
	secs := f.period.Seconds()
	limit := func(r uint64) float64 {
		if f.app > 0 {
			r = min(r, f.app)
		}
		return float64(r)
	}
	if d.Mode == BestPath {
		r := f.rateA
		if d.Best == pathB {
			r = f.rateB
		}
		f.acked[d.Best] += uint64(limit(r) * secs)
	} else {
		// multipath goodput, split by the paths' rates
		mp := limit(f.mp)
		if f.step <= f.ramp {
			mp = mp * float64(f.step) / float64(f.ramp+1)
		}
		a := mp * float64(f.rateA) / float64(f.rateA+f.rateB)
		f.acked[pathA] += uint64(a * secs)
		f.acked[pathB] += uint64((mp - a) * secs)
	}
	return Sample{At: f.t0.Add(time.Duration(f.step) * f.period), Subflows: []SubflowSample{
		{ID: pathA, DeliveryRate: f.rateA, BytesAcked: f.acked[pathA]},
		{ID: pathB, DeliveryRate: f.rateB, BytesAcked: f.acked[pathB]},
	}}
}

// peek answers a decision's peek as run.go does: the backup path, freed
// for a moment, delivers at its own rate.
func (f *fakeNet) peek(e *Engine, d Decision) {
	switch d.Peek {
	case pathA:
		e.Peeked(pathA, f.rateA, true)
	case pathB:
		e.Peeked(pathB, f.rateB, true)
	}
}

// decide is one period: the sample under d, the engine's decision on it, and
// the peek that decision asks for.
func (f *fakeNet) decide(e *Engine, d Decision) Decision {
	d = e.Step(f.next(d))
	f.peek(e, d)
	return d
}

// trialShare is the time a held mode gives to trials with the default
// config and no RTT: one step settling and 4 measured, every 16 held.
const trialShare = 5.0 / 21

// run drives the engine for n steps and returns the share of steps spent
// in each mode and the decisions that switched.
func run(t *testing.T, e *Engine, f *fakeNet, n int) (bestShare float64, switches []Decision) {
	t.Helper()
	d := Decision{Mode: Multipath}
	best := 0
	for i := 0; i < n; i++ {
		d = f.decide(e, d)
		if d.Mode == BestPath {
			best++
			if len(d.Backup) != 1 || d.Backup[0] == d.Best {
				t.Fatalf("best-path decision %+v: want the other subflow as backup", d)
			}
		} else if len(d.Backup) != 0 {
			t.Fatalf("multipath decision with backups: %+v", d)
		}
		if d.Switched {
			switches = append(switches, d)
		}
	}
	return float64(best) / float64(n), switches
}

// The first trial comes as soon as the warm-up's goodput stops growing (two
// measured periods), not after the whole warm-up: where multipath is poor,
// every period of it costs most of the best path's rate.
func TestWarmupEndsWhenGoodputPlateaus(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 1e5, 3e5)
	d := Decision{Mode: Multipath}
	for i := 1; i <= 3; i++ {
		d = f.decide(e, d)
		if want := i == 3; d.Trial != want {
			t.Fatalf("step %d: trial %v, want %v (%s)", i, d.Trial, want, d.Reason)
		}
	}
	if d.Mode != BestPath || !strings.Contains(d.Reason, "warm-up over") {
		t.Errorf("step 3: %v (%s), want a best-path trial ending the warm-up", d.Mode, d.Reason)
	}
}

// While the goodput still grows (slow start), the warm-up runs its full
// length: a multipath rate measured half-way up the ramp would lose to
// best path for the wrong reason.
func TestWarmupWaitsOutSlowStart(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 1e6, 2e6)
	f.ramp = 8
	d := Decision{Mode: Multipath}
	warmup := Config.withDefaults(Config{}).Warmup
	for i := 1; i < warmup; i++ {
		if d = f.decide(e, d); d.Trial {
			t.Fatalf("step %d: trial while the goodput still grows (%s)", i, d.Reason)
		}
	}
	if d = f.decide(e, d); !d.Trial {
		t.Errorf("step %d, the warm-up's last: no trial (%s)", warmup, d.Reason)
	}
}

// Where aggregation works (two equal paths, multipath twice either), the
// controller stays in multipath except for its short trials.
func TestAggregationWorksStaysMultipath(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 1e6, 2e6)
	share, _ := run(t, e, f, 400)
	if share > trialShare+0.01 {
		t.Errorf("best-path mode %.0f%% of the time where multipath doubles goodput", 100*share)
	}
	if e.Mode() != Multipath && e.phase != trying {
		t.Errorf("ended in %v while holding", e.Mode())
	}
}

// Where aggregation hurts (seed 004: minRTT at 26% of the best path), it
// goes to best-path mode on the better path and stays there but for the
// re-probes.
func TestAggregationHurtsGoesBestPath(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 3e5, 2.6e5)
	share, sw := run(t, e, f, 400)
	if share < 1-trialShare-0.01 {
		t.Errorf("best-path mode only %.0f%% of the time where multipath gets 26%% of the best path", 100*share)
	}
	for _, d := range sw {
		if d.Mode == BestPath && d.Best != pathA {
			t.Fatalf("chose %v as best; path A delivers 1 MB/s against 0.3", d.Best)
		}
	}
}

// Hysteresis: a trial that wins by less than the margin changes nothing.
func TestMarginKeepsHeldMode(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 1e5, 952380) // best path 5% better than multipath
	share, _ := run(t, e, f, 420)
	if share > trialShare+0.01 {
		t.Errorf("best-path mode %.0f%% of the time for a 5%% gain under a 10%% margin", 100*share)
	}
}

// A path that degrades and recovers: the controller follows both ways
// within a few seconds.
// holdingBestPath runs the engine 30 s where path A is best, then on until
// a best-path hold on A begins, and returns the decision in force.
func holdingBestPath(t *testing.T, e *Engine, f *fakeNet) Decision {
	t.Helper()
	run(t, e, f, 60)
	d := Decision{Mode: e.Mode(), Best: e.best}
	for i := 0; !(e.Mode() == BestPath && e.best == pathA && e.phase == holding && e.steps == 0); i++ {
		if i > 100 {
			t.Fatalf("no best-path hold on A began within 80 s where A is best (%v on %v)", e.Mode(), e.best)
		}
		d = f.decide(e, d)
	}
	return d
}

func TestFollowsDegradationAndRecovery(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 3e5, 2.6e5)
	// Degrade just as a hold begins, so only the degradation check (not
	// the periodic re-probe, 8 s or more away) can end it in time.
	d := holdingBestPath(t, e, f)
	// A collapses; multipath now beats A alone.
	f.rateA, f.mp = 1e5, 4e5
	var at int
	for i := 1; i <= 40; i++ {
		d = f.decide(e, d)
		if d.Mode == Multipath && e.phase == holding {
			at = i
			break
		}
	}
	// Noticing takes one measurement (4 steps), the trial one step to
	// settle and 4 to measure.
	if at == 0 || at > 10 {
		t.Fatalf("took %d steps (of 500 ms) to leave a best path that lost 90%%; want within 5 s", at)
	}
	// A recovers.
	f.rateA, f.mp = 1e6, 2.6e5
	at = 0
	for i := 1; i <= 60; i++ {
		d = f.decide(e, d)
		if d.Mode == BestPath && e.phase == holding {
			at = i
			break
		}
	}
	if at == 0 || at > 30 {
		t.Fatalf("took %d steps to return to the recovered path; want within 15 s", at)
	}
}

// The default scheduler's stall: data queued on a subflow that makes no
// progress while its sibling idles switches to best-path mode at once, on
// the idle sibling.
func TestStallSwitchesAtOnce(t *testing.T) {
	e := NewEngine(Config{})
	t0 := time.Unix(0, 0)
	var d Decision
	for i := 0; i <= 4; i++ {
		s := Sample{At: t0.Add(time.Duration(i) * 500 * time.Millisecond), Subflows: []SubflowSample{
			{ID: pathA, DeliveryRate: 1e5, BytesAcked: 1000, NotSent: 970 << 10}, // stuck
			{ID: pathB, DeliveryRate: 1e6, BytesAcked: 5000},                     // idle
		}}
		d = e.Step(s)
		if d.Switched {
			if i < 2 {
				t.Fatalf("switched after %d ms, before the stall time", i*500)
			}
			if d.Mode != BestPath || d.Best != pathB || !strings.HasPrefix(d.Reason, "stall") {
				t.Fatalf("stall decision %+v: want best-path on the idle sibling", d)
			}
			return
		}
	}
	t.Fatalf("no switch after 2 s of stall: %+v", d)
}

// The best path collapses, multipath is no better, and the other path
// alone is: after the multipath trial the controller moves to the other
// path at once - the trial's own measurement, not a window that still
// holds the collapsed path's old rate - and, since the trial followed a
// change, the next hold is not backed off.
func TestCollapsedBestPathMovesToTheOther(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 3e5, 2.6e5)
	d := holdingBestPath(t, e, f)
	f.rateA, f.mp = 1e5, 0.9e5
	for i := 1; i <= 20; i++ {
		d = f.decide(e, d)
		if d.Chosen {
			if d.Mode != BestPath || d.Best != pathB {
				t.Fatalf("after A collapsed: %v on %v (%s); want best-path on B", d.Mode, d.Best, d.Reason)
			}
			if e.length != e.cfg.Hold {
				t.Fatalf("hold after a trial that followed a change: %d periods, want %d", e.length, e.cfg.Hold)
			}
			t.Logf("on B after %d steps: %s", i, d.Reason)
			return
		}
	}
	t.Fatalf("no choice 10 s after the best path collapsed: %v on %v", e.Mode(), e.best)
}

// With ResetStalled the stall is answered by closing the stuck subflow, in
// multipath mode, not by a backup flag.
func TestStallResetsWhenConfigured(t *testing.T) {
	e := NewEngine(Config{ResetStalled: true})
	t0 := time.Unix(0, 0)
	for i := 0; i <= 4; i++ {
		d := e.Step(Sample{At: t0.Add(time.Duration(i) * 500 * time.Millisecond), Subflows: []SubflowSample{
			{ID: pathA, DeliveryRate: 1e4, BytesAcked: 1000 + uint64(i)*5000, NotSent: 970 << 10}, // trickling
			{ID: pathB, DeliveryRate: 1e6, BytesAcked: 5000},                                      // idle
		}})
		if len(d.Reset) > 0 {
			if d.Mode != Multipath || len(d.Backup) != 0 || d.Reset[0] != pathA || Cause(d) != CauseStall {
				t.Fatalf("reset decision %+v (cause %q): want multipath, no flag, path A reset, cause stall", d, Cause(d))
			}
			return
		}
		if d.Mode == BestPath {
			t.Fatalf("flagged instead of resetting: %+v", d)
		}
	}
	t.Fatal("no reset after 2 s of stall")
}

// A best path that stalls returns the connection to multipath, and the
// reason names that path.
func TestStalledBestPathReturnsToMultipath(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 3e5, 2.6e5)
	holdingBestPath(t, e, f)
	var d Decision
	for i := 1; i <= 4; i++ {
		d = e.Step(Sample{At: f.t0.Add(time.Hour + time.Duration(i)*500*time.Millisecond), Subflows: []SubflowSample{
			{ID: pathA, DeliveryRate: 1e4, BytesAcked: f.acked[pathA] + uint64(i), NotSent: 970 << 10}, // the best path, stuck
			{ID: pathB, DeliveryRate: 3e5, BytesAcked: f.acked[pathB]},                                 // idle backup
		}})
		if d.Switched {
			break
		}
	}
	if d.Mode != Multipath || !strings.Contains(d.Reason, pathA.String()) {
		t.Fatalf("after the best path stalled: %+v; want multipath, the reason naming %v", d, pathA)
	}
}

// The stall as it shows on lossy paths: the stuck subflow is not silent, it
// trickles (a window of a few packets over a long RTT), but at 15 KB/s its
// 970 KB queue would take a minute to drain. That is a stall too. A slow
// subflow that drains its queue in a couple of seconds is not.
func TestTrickleIsAStallASlowQueueIsNot(t *testing.T) {
	for _, c := range []struct {
		name         string
		pace, queued uint64 // bytes/s the queued subflow delivers, bytes queued
		stall        bool
	}{
		{"trickle", 15e3, 970 << 10, true},
		{"slow path draining", 125e3, 300 << 10, false},
	} {
		e := NewEngine(Config{})
		t0 := time.Unix(0, 0)
		switched := false
		for i := 0; i <= 8; i++ {
			s := Sample{At: t0.Add(time.Duration(i) * 500 * time.Millisecond), Subflows: []SubflowSample{
				{ID: pathA, DeliveryRate: c.pace, BytesAcked: 1000 + uint64(i)*c.pace/2, NotSent: uint32(c.queued)},
				{ID: pathB, DeliveryRate: 1e6, BytesAcked: 5000}, // idle
			}}
			if d := e.Step(s); d.Switched && strings.HasPrefix(d.Reason, "stall") {
				switched = true
				if d.Best != pathB {
					t.Fatalf("%s: stall decision %+v: want best-path on the idle sibling", c.name, d)
				}
			}
		}
		if switched != c.stall {
			t.Errorf("%s (%d B/s, %d B queued): stall seen %v, want %v", c.name, c.pace, c.queued, switched, c.stall)
		}
	}
}

// One subflow: nothing to choose, never a backup flag.
func TestSingleSubflowNeverFlags(t *testing.T) {
	e := NewEngine(Config{})
	for i := 0; i < 50; i++ {
		d := e.Step(Sample{At: time.Unix(int64(i), 0), Subflows: []SubflowSample{{ID: pathA, BytesAcked: uint64(i) * 1e6}}})
		if d.Mode != Multipath || len(d.Backup) != 0 {
			t.Fatalf("one subflow: %+v", d)
		}
	}
}

// The best path closing returns the connection to multipath.
func TestBestPathClosedReturnsToMultipath(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 3e5, 2.6e5)
	holdingBestPath(t, e, f)
	pathC := SubflowID{netip.MustParseAddrPort("10.0.2.1:1002"), netip.MustParseAddrPort("10.1.0.1:80")}
	d := e.Step(Sample{At: f.t0.Add(time.Hour), Subflows: []SubflowSample{
		{ID: pathB, BytesAcked: f.acked[pathB]}, {ID: pathC},
	}})
	if d.Mode != Multipath || !d.Switched || len(d.Backup) != 0 {
		t.Fatalf("after the best path closed: %+v", d)
	}
}

// The held best path degrades while the backup recovers, and multipath
// still hurts: after the multipath trial (which measures every path) the
// controller returns to best-path mode on the recovered path.
func TestMovesToRecoveredBackupPath(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 3e5, 2.6e5)
	d := holdingBestPath(t, e, f)
	f.rateA, f.rateB, f.mp = 1e5, 1e6, 2e5
	for i := 1; i <= 60; i++ {
		d = f.decide(e, d)
		if d.Chosen && d.Mode == BestPath && d.Best == pathB {
			t.Logf("on B after %d steps: %s", i, d.Reason)
			return
		}
	}
	t.Fatalf("still %v on %v after 30 s with B ten times A", e.Mode(), e.best)
}

// Where multipath keeps winning, each lost trial doubles the next hold up
// to HoldMax, so trials grow rare: after the first few, one every 64
// periods instead of every 16.
func TestTrialsGrowRareWhereNothingChanges(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 1e6, 2e6)
	d := Decision{Mode: Multipath}
	var starts []int
	best := 0
	for i := 0; i < 400; i++ {
		d = f.decide(e, d)
		if d.Switched && d.Trial {
			starts = append(starts, i)
		}
		if d.Mode == BestPath {
			best++
		}
	}
	if len(starts) < 3 {
		t.Fatalf("only %d trials in 200 s", len(starts))
	}
	gap := starts[len(starts)-1] - starts[len(starts)-2]
	if gap < e.cfg.HoldMax {
		t.Errorf("trials at steps %v: the last gap is %d periods, want at least HoldMax (%d)", starts, gap, e.cfg.HoldMax)
	}
	share := float64(best) / 400
	t.Logf("trials began at steps %v; best-path trials took %.1f%% of the time", starts, 100*share)
	if share > trialShare/2 {
		t.Errorf("best-path trials took %.0f%% of the time; without backing off it would be %.0f%%", 100*share, 100*trialShare)
	}
}

// A trial losing by far ends half-way: the multipath trial where
// multipath gets 26% of the best path is cut after 2 of its 4 periods.
func TestLosingTrialEndsHalfWay(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 3e5, 2.6e5)
	d := Decision{Mode: Multipath}
	for i := 0; i < 100; i++ {
		d = f.decide(e, d)
		if d.Chosen && d.Mode == BestPath && e.lost > 0 {
			if !strings.Contains(d.Reason, "ended after 2 of 4") {
				t.Fatalf("the losing multipath trial was not cut half-way: %s", d.Reason)
			}
			return
		}
	}
	t.Fatal("no multipath trial lost in 50 s where multipath gets 26% of the best path")
}

// Backing off does not make the controller slow to follow a change: the
// held mode losing half its goodput starts a trial at once, and a trial
// that wins brings the hold back to Hold.
func TestDegradationCutsALongHold(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 1e6, 2e6)
	run(t, e, f, 200)
	if e.Mode() != Multipath || e.lost == 0 {
		t.Fatalf("setup: %v with %d trials lost in a row, want multipath after lost trials", e.Mode(), e.lost)
	}
	// Path B collapses and drags multipath below path A alone.
	f.rateB, f.mp = 1e5, 3e5
	d := Decision{Mode: e.Mode()}
	for i := 1; i <= 20; i++ {
		d = f.decide(e, d)
		if d.Chosen && d.Mode == BestPath {
			if d.Best != pathA {
				t.Fatalf("chose %v; A is the path left", d.Best)
			}
			if e.lost != 0 || e.length != e.cfg.Hold {
				t.Fatalf("after a winning trial: %d lost in a row, hold %d; want 0 and %d", e.lost, e.length, e.cfg.Hold)
			}
			t.Logf("best-path on A after %d steps: %s", i, d.Reason)
			return
		}
	}
	t.Fatalf("still %v 10 s after multipath fell to 15%% of what it had", e.Mode())
}

// A backup path that recovers is noticed by a peek, not at the hold's
// end: B, degraded to a tenth of A, comes back at twice A while multipath
// still hurts. With peeks the controller is on B within a peek, a trial
// and its settling (12 steps); without them not before the hold ends (16
// periods or more: the trials lost before have backed it off).
func TestPeekNoticesRecoveredBackup(t *testing.T) {
	moved := func(peek int) int {
		e := NewEngine(Config{Peek: peek})
		f := newFakeNet(1e6, 1e5, 2e5)
		d := holdingBestPath(t, e, f)
		f.rateB, f.mp = 2e6, 5e5
		for i := 1; i <= 150; i++ {
			d = f.decide(e, d)
			if d.Mode == BestPath && d.Best == pathB && e.phase == holding {
				return i
			}
		}
		return 0
	}
	with, without := moved(0), moved(NoPeeks)
	t.Logf("on B after %d steps with peeks, %d without (0: not within 150)", with, without)
	if with == 0 || with > 12 {
		t.Errorf("with peeks: on B after %d steps (0: not within 150), want at most 12", with)
	}
	if without != 0 && without <= 16 {
		t.Errorf("without peeks: on B after %d steps; the hold should have delayed it past 16", without)
	}
}

// A peek that measures a backup at PeekGain times its previous peek
// starts a trial even below the best path's rate: here B came back
// enough for multipath to win.
func TestPeekGainStartsTrial(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 1e5, 2e5)
	d := holdingBestPath(t, e, f)
	for i := 0; i < 2*e.cfg.Peek; i++ { // at least one peek at the degraded B
		d = f.decide(e, d)
	}
	if e.Mode() != BestPath {
		t.Fatalf("setup: %v, want best-path on A", e.Mode())
	}
	f.rateB, f.mp = 5e5, 1.5e6
	for i := 1; i <= e.cfg.PeekMax+1; i++ {
		d = f.decide(e, d)
		if d.Switched {
			if d.Mode != Multipath || !d.Trial || !strings.Contains(d.Reason, "5.0x its previous peek") {
				t.Fatalf("after B's peek at 5x: %+v; want a multipath trial for the gain", d)
			}
			return
		}
	}
	t.Fatalf("no trial within a peek of B's recovery: %v", e.Mode())
}

// Where nothing changes, best-path mode peeks at the backup every Peek
// periods instead of trying multipath at every hold's end, so it spends
// less time in losing trials than without peeks.
func TestPeeksReplaceTrialsInBestPath(t *testing.T) {
	trials := func(cfg Config) (n, peeks int) {
		e := NewEngine(cfg)
		f := newFakeNet(1e6, 3e5, 2.6e5)
		d := Decision{Mode: Multipath}
		for i := 0; i < 400; i++ {
			d = f.decide(e, d)
			if d.Switched && d.Trial && d.Mode == Multipath {
				n++
			}
			if d.Peek != (SubflowID{}) {
				if d.Mode != BestPath || d.Peek != pathB || len(d.Backup) != 1 || d.Backup[0] != pathB {
					t.Fatalf("peek decision %+v: want a peek at the backup B in best-path mode", d)
				}
				peeks++
			}
		}
		return n, peeks
	}
	with, peeks := trials(Config{})
	without, none := trials(Config{Peek: NoPeeks})
	t.Logf("multipath trials in 200 s: %d with peeks (%d peeks), %d without", with, peeks, without)
	if none != 0 || peeks < 400/8/2 {
		t.Errorf("%d peeks with Peek 4 (want about one every 8 periods in best-path, after back-off), %d with Peek -1 (want 0)", peeks, none)
	}
	if with >= without {
		t.Errorf("multipath trials: %d with peeks, %d without; peeks should replace them", with, without)
	}
}

// A path that collapses under a full queue gets no ACK for a while, and
// tcpi_delivery_rate goes on reporting the rate of its last one. Periods
// in which a subflow with data out delivered nothing count as rate 0, so
// the path chosen after a multipath trial is the one that delivers now.
func TestStaleDeliveryRateIsNotBest(t *testing.T) {
	e := NewEngine(Config{})
	t0 := time.Unix(0, 0)
	for i := 0; i <= 4; i++ {
		e.Step(Sample{At: t0.Add(time.Duration(i) * 500 * time.Millisecond), Subflows: []SubflowSample{
			{ID: pathA, DeliveryRate: 1e6, BytesAcked: 5e6, NotSent: 100 << 10, Unacked: 30}, // stale: no ACK since
			{ID: pathB, DeliveryRate: 3e5, BytesAcked: 1e6 + uint64(i)*15e4},
		}})
	}
	if best := e.bestOfLast([]SubflowID{pathA, pathB}, 2); best != pathB {
		t.Fatalf("best of the last 2 periods: %v; A delivered nothing in them, B 300 KB/s", best)
	}
}

// An application whose rate fits the best path gets the same goodput in
// either mode. By default the tie goes to the held mode (multipath); with
// PreferBestPath it goes to best-path mode, where no data waits for the
// slower path.
func TestPreferBestPathTakesTies(t *testing.T) {
	for _, prefer := range []bool{false, true} {
		e := NewEngine(Config{PreferBestPath: prefer})
		f := newFakeNet(1e6, 3e5, 1.2e6)
		f.app = 5e5
		share, _ := run(t, e, f, 400)
		t.Logf("PreferBestPath %v: best-path %.0f%% of the time", prefer, 100*share)
		if prefer && share < 0.9 {
			t.Errorf("PreferBestPath: best-path only %.0f%% of the time for an application at half the best path", 100*share)
		}
		if !prefer && share > trialShare+0.01 {
			t.Errorf("by default: best-path %.0f%% of the time on a tie; the held multipath should keep it", 100*share)
		}
	}
}

// Peeks that see nothing new come less often (every Peek periods, then
// every PeekMax): each costs the best path a wait for a slow one. A new
// hold starts again at Peek.
func TestPeeksBackOffWhileNothingChanges(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 1e5, 2e5)
	d := holdingBestPath(t, e, f)
	var gaps []int
	last := 0
	for i := 1; i <= 40; i++ {
		d = f.decide(e, d)
		if d.Mode != BestPath || d.Switched {
			t.Fatalf("step %d: %v (%s); want best-path held", i, d.Mode, d.Reason)
		}
		if d.Peek != (SubflowID{}) {
			gaps = append(gaps, i-last)
			last = i
		}
	}
	want := []int{4, 8, 8, 8, 8}
	if fmt.Sprint(gaps) != fmt.Sprint(want) {
		t.Errorf("periods between peeks at an unchanged backup: %v, want %v", gaps, want)
	}
	e.enter(BestPath, pathA, holding, e.cfg.Hold)
	for i := 1; i <= e.cfg.Peek; i++ {
		if d = f.decide(e, d); d.Peek != (SubflowID{}) && i != e.cfg.Peek {
			t.Fatalf("a new hold peeked after %d periods, want %d", i, e.cfg.Peek)
		}
	}
	if d.Peek == (SubflowID{}) {
		t.Errorf("a new hold did not peek after %d periods", e.cfg.Peek)
	}
}
