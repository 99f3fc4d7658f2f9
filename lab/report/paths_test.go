// SPDX-License-Identifier: Apache-2.0

package report

import (
	"math"
	"strings"
	"testing"
)

// A connection with a subflow on a and one on b, equal until 10 s; then b's
// window falls to a quarter of a's and its srtt doubles (a queue of 40 ms
// on b), the rate share on b reaching its new level at 10.6 s.
func shiftSamples() []SubflowSample {
	var out []SubflowSample
	var ackA, ackB uint64
	for i := 0; i <= 300; i++ {
		t := float64(i) / 10
		cwA, cwB, srttB := uint32(40), uint32(40), 40.0
		switch {
		case t >= 10.55:
			cwB, srttB = 10, 80
		case t >= 10.05:
			cwB, srttB = 20, 60
		}
		ackA += 1000
		if t >= 10.55 {
			ackB += 250
		} else {
			ackB += 1000
		}
		out = append(out,
			SubflowSample{T: t, Flow: "mp", Subflow: 0, Path: "a", Source: "both", Cwnd: cwA, SRTTMs: 40, MinRTTMs: 40, BytesAcked: ackA},
			SubflowSample{T: t, Flow: "mp", Subflow: 1, Path: "b", Source: "both", Cwnd: cwB, SRTTMs: srttB, MinRTTMs: 40, BytesAcked: ackB},
			// another flow's and the map's rows must not count
			SubflowSample{T: t, Flow: "cross", Subflow: 0, Path: "b", Source: "kernel", Cwnd: 99, SRTTMs: 80, MinRTTMs: 40, BytesAcked: 1},
			SubflowSample{T: t, Flow: "mp", Subflow: 1, Path: "b", Source: "bpf", Cwnd: 99, SRTTMs: 1000, MinRTTMs: 1, BytesAcked: 1})
	}
	return out
}

func TestPathShift(t *testing.T) {
	sp := ShiftSpec{Flow: "mp", Path: "b", At: 10, Before: Window{5, 10}, After: Window{15, 30}}
	ps, err := pathShift(shiftSamples(), sp)
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("bytes on b before", ps.BytesBefore, 0.5)
	near("bytes on b after", ps.BytesAfter, 0.2)
	near("queue on b before", ps.QueueBefore["b"], 0)
	near("queue on b after", ps.QueueAfter["b"], 40)
	near("queue on a after", ps.QueueAfter["a"], 0)
	// Rate share on b: 0.5 before, (10/80)/(1 + 10/80) = 1/9 after; at
	// 10.1 s it is (20/60)/(1 + 20/60) = 0.25, under the half-way 0.306.
	near("half the shift", ps.HalfS, 0.1)

	var b strings.Builder
	if err := WritePathShifts(&b, sp, []PathShift{ps}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| 0 | 0.5 | 0.2 | 0.1 | 0 | 0 | 0 | 40 |") {
		t.Errorf("table has not the measured values:\n%s", b.String())
	}

	if _, err := pathShift(shiftSamples(), ShiftSpec{Flow: "mp", Path: "z"}); err == nil || !strings.Contains(err.Error(), "it has: a, b") {
		t.Errorf("unknown path: err = %v, want one naming the flow's paths", err)
	}
	if _, err := pathShift(shiftSamples(), ShiftSpec{Flow: "nope", Path: "b"}); err == nil {
		t.Error("unknown flow: no error")
	}
}

func TestPathShiftNone(t *testing.T) {
	// Nothing changes: no shift to time.
	var s []SubflowSample
	for i := 0; i <= 300; i++ {
		t := float64(i) / 10
		s = append(s, SubflowSample{T: t, Flow: "mp", Subflow: 0, Path: "a", Cwnd: 10, SRTTMs: 40, MinRTTMs: 40, BytesAcked: uint64(i)},
			SubflowSample{T: t, Flow: "mp", Subflow: 1, Path: "b", Cwnd: 10, SRTTMs: 40, MinRTTMs: 40, BytesAcked: uint64(i)})
	}
	ps, err := pathShift(s, ShiftSpec{Flow: "mp", Path: "b", At: 10, Before: Window{5, 10}, After: Window{15, 30}})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(ps.HalfS) {
		t.Errorf("half the shift = %v with no shift, want none (NaN)", ps.HalfS)
	}
}

func TestQueueDelay(t *testing.T) {
	s := shiftSamples()
	// 15-30 s: a at 0 ms, b at 40 ms, kernel rows only.
	if q, ok := queueDelay(s, "mp", 15, 30); !ok || math.Abs(q-20) > 1e-9 {
		t.Errorf("queueDelay = %v, %v; want 20 ms", q, ok)
	}
	if _, ok := queueDelay(s, "nope", 0, 30); ok {
		t.Error("queueDelay of a flow without samples: ok")
	}
}
