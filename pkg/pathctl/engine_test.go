package pathctl

import (
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
	period time.Duration
}

func newFakeNet(rateA, rateB, mp uint64) *fakeNet {
	return &fakeNet{t0: time.Unix(1000, 0), acked: map[SubflowID]uint64{}, rateA: rateA, rateB: rateB, mp: mp, period: 500 * time.Millisecond}
}

// next returns the sample at the end of a step run under decision d.
func (f *fakeNet) next(d Decision) Sample {
	f.step++
	secs := f.period.Seconds()
	if d.Mode == BestPath {
		r := f.rateA
		if d.Best == pathB {
			r = f.rateB
		}
		f.acked[d.Best] += uint64(float64(r) * secs)
	} else {
		// multipath goodput, split by the paths' rates
		a := float64(f.mp) * float64(f.rateA) / float64(f.rateA+f.rateB)
		f.acked[pathA] += uint64(a * secs)
		f.acked[pathB] += uint64((float64(f.mp) - a) * secs)
	}
	return Sample{At: f.t0.Add(time.Duration(f.step) * f.period), Subflows: []SubflowSample{
		{ID: pathA, DeliveryRate: f.rateA, BytesAcked: f.acked[pathA]},
		{ID: pathB, DeliveryRate: f.rateB, BytesAcked: f.acked[pathB]},
	}}
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
		d = e.Step(f.next(d))
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
		d = e.Step(f.next(d))
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
		d = e.Step(f.next(d))
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
		d = e.Step(f.next(d))
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
		d = e.Step(f.next(d))
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
		d = e.Step(f.next(d))
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
		d = e.Step(f.next(d))
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
		d = e.Step(f.next(d))
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
		d = e.Step(f.next(d))
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
