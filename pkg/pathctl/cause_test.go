// SPDX-License-Identifier: Apache-2.0

package pathctl

import (
	"net/netip"
	"testing"
	"time"
)

// Every reason the engine gives for a reported decision maps to its cause:
// the engine is driven into each, as the engine's own tests do.
func TestCauseOfEveryReason(t *testing.T) {
	seen := map[string]string{} // cause -> a reason that gave it
	reasons := map[string]bool{}
	record := func(d Decision) {
		c := Cause(d)
		if d.Switched || d.Chosen {
			if c == "" {
				t.Errorf("reported decision %+v has no cause", d)
			}
			seen[c] = d.Reason
			reasons[d.Reason] = true
		} else if c != "" {
			t.Errorf("decision %+v neither switched nor chose, yet has cause %q", d, c)
		}
	}
	drive := func(e *Engine, f *fakeNet, d Decision, n int) Decision {
		for i := 0; i < n; i++ {
			d = e.Step(f.next(d))
			record(d)
		}
		return d
	}

	// Aggregation hurts: a trial of best-path, which wins; later a trial of
	// multipath, which loses.
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 3e5, 2.6e5)
	d := drive(e, f, Decision{Mode: Multipath}, 30)
	// A collapses just as a hold begins: degraded, multipath tried.
	for i := 0; !(e.Mode() == BestPath && e.phase == holding && e.steps == 0); i++ {
		if i > 100 {
			t.Fatal("never began a best-path hold")
		}
		d = e.Step(f.next(d))
		record(d)
	}
	f.rateA, f.mp = 1e5, 4e5
	d = drive(e, f, d, 20)
	// Back to best-path, then the best path closes.
	f.rateA, f.mp = 1e6, 2.6e5
	for i := 0; e.Mode() != BestPath || e.phase != holding; i++ {
		if i > 100 {
			t.Fatal("never returned to best-path")
		}
		d = e.Step(f.next(d))
		record(d)
	}
	pathC := SubflowID{pathB.Local, pathA.Remote}
	pathC.Local = netip.AddrPortFrom(pathC.Local.Addr(), 1002)
	record(e.Step(Sample{At: f.t0.Add(time.Hour), Subflows: []SubflowSample{{ID: pathB, BytesAcked: f.acked[pathB]}, {ID: pathC}}}))
	// In best-path mode again, a subflow closes and leaves one.
	e = NewEngine(Config{})
	f = newFakeNet(1e6, 3e5, 2.6e5)
	holdingBestPath(t, e, f)
	record(e.Step(Sample{At: f.t0.Add(time.Hour), Subflows: []SubflowSample{{ID: pathB, BytesAcked: f.acked[pathB]}}}))

	// Aggregation works: the trial of best-path loses.
	e = NewEngine(Config{})
	drive(e, newFakeNet(1e6, 1e6, 2e6), Decision{Mode: Multipath}, 30)

	// A stall.
	e = NewEngine(Config{})
	for i := 0; i <= 4; i++ {
		record(e.Step(Sample{At: time.Unix(0, 0).Add(time.Duration(i) * 500 * time.Millisecond), Subflows: []SubflowSample{
			{ID: pathA, DeliveryRate: 1e5, BytesAcked: 1000, NotSent: 970 << 10},
			{ID: pathB, DeliveryRate: 1e6, BytesAcked: 5000},
		}}))
	}

	for _, c := range Causes {
		if _, ok := seen[c]; !ok {
			t.Errorf("no decision had cause %q (seen: %v)", c, seen)
		}
	}
	for _, r := range []string{"best path closed", "fewer than two subflows"} {
		if !reasons[r] {
			t.Errorf("the engine never reported %q", r)
		}
	}
	for c, r := range seen {
		t.Logf("%-8s %s", c, r)
	}
}

// A trial of multipath that a closing subflow interrupts ends with no
// switch (the engine is in multipath already); Run still reports it, so
// whoever saw the trial start sees it end.
func TestInterruptedTrialIsReported(t *testing.T) {
	e := NewEngine(Config{})
	f := newFakeNet(1e6, 3e5, 2.6e5)
	d := Decision{Mode: Multipath}
	for i := 0; !(d.Switched && d.Trial && d.Mode == Multipath); i++ {
		if i > 200 {
			t.Fatal("never tried multipath")
		}
		d = e.Step(f.next(d))
	}
	d = e.Step(Sample{At: f.t0.Add(time.Hour), Subflows: []SubflowSample{{ID: pathA, BytesAcked: f.acked[pathA]}}})
	if d.Switched || d.Chosen || d.Trial {
		t.Fatalf("setup: the engine now reports the interruption itself: %+v", d)
	}
	if !reportable(d, true, nil) {
		t.Errorf("the end of the trial (%q) is not reported", d.Reason)
	}
	if reportable(d, false, nil) {
		t.Errorf("a held decision with nothing new is reported: %+v", d)
	}
	if Cause(d) != "" {
		t.Errorf("an unswitched decision has cause %q", Cause(d))
	}
}
