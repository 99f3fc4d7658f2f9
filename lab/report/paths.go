// SPDX-License-Identifier: Apache-2.0

// How a multipath connection split its traffic over its paths before and
// after a moment of a repetition (a competing flow starting on one path),
// from the raw subflow samples: `mptcp-lab paths`.

package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Window is a span of a repetition, in seconds from its start.
type Window struct{ From, To float64 }

func (w Window) String() string { return fmt.Sprintf("%g-%g s", w.From, w.To) }

// ShiftSpec says what to measure: flow instance Flow's share of bytes on
// path Path in the Before and After windows, and how long after At its
// rate share on Path took to cross half-way from the before level to the
// after level.
type ShiftSpec struct {
	Flow          string
	Path          string
	At            float64
	Before, After Window
}

// PathShift is one repetition of one case measured by a ShiftSpec.
type PathShift struct {
	Case string
	Rep  int
	// Share of the connection's bytes acked on the path, in each window.
	BytesBefore, BytesAfter float64
	// Mean srtt minus min RTT of the connection's subflow on each path,
	// in each window (ms).
	QueueBefore, QueueAfter map[string]float64
	// HalfS is the time from At until the rate share on the path (each
	// subflow's cwnd/srtt over their sum, sample by sample) first fell
	// half-way from its mean in Before to its mean in After; NaN when the
	// two means differ by less than 0.05 (no shift to time).
	HalfS float64
}

// PathShifts measures every repetition of every case under dir (a
// scenario's results directory, DIR/<scenario name> of `run --out DIR`).
func PathShifts(dir string, sp ShiftSpec) ([]PathShift, error) {
	sum, err := ReadSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, err
	}
	var out []PathShift
	for _, c := range sum.Cases {
		for _, rb := range c.Reps {
			if rb.Error != "" || rb.Anomaly != "" {
				continue
			}
			r, err := readRepRaw(filepath.Join(dir, rb.Dir))
			if err != nil {
				return nil, err
			}
			ps, err := pathShift(r.Samples, sp)
			if err != nil {
				return nil, fmt.Errorf("%s rep %d: %w", c.ID, rb.Rep, err)
			}
			ps.Case, ps.Rep = c.ID, rb.Rep
			out = append(out, ps)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no repetition without an error to measure", dir)
	}
	return out, nil
}

func pathShift(all []SubflowSample, sp ShiftSpec) (PathShift, error) {
	var samples []SubflowSample
	paths := map[string]bool{}
	for _, s := range all {
		if s.Flow == sp.Flow && s.Source != "bpf" {
			samples = append(samples, s)
			paths[s.Path] = true
		}
	}
	if len(samples) == 0 {
		return PathShift{}, fmt.Errorf("no kernel samples of flow %q (flow instances are named as in flows.csv, e.g. mp)", sp.Flow)
	}
	if !paths[sp.Path] {
		return PathShift{}, fmt.Errorf("flow %q has no subflow on path %q (it has: %s)", sp.Flow, sp.Path, strings.Join(sortedKeys(paths), ", "))
	}
	ps := PathShift{QueueBefore: map[string]float64{}, QueueAfter: map[string]float64{}}
	ps.BytesBefore = bytesShare(samples, sp.Path, sp.Before)
	ps.BytesAfter = bytesShare(samples, sp.Path, sp.After)
	for p := range paths {
		ps.QueueBefore[p] = pathQueue(samples, p, sp.Before)
		ps.QueueAfter[p] = pathQueue(samples, p, sp.After)
	}
	series := rateShares(samples, sp.Path)
	before, after := meanIn(series, sp.Before), meanIn(series, sp.After)
	ps.HalfS = math.NaN()
	if math.Abs(before-after) >= 0.05 {
		half := (before + after) / 2
		for _, x := range series {
			if x.t >= sp.At && (before > after && x.v <= half || before < after && x.v >= half) {
				ps.HalfS = x.t - sp.At
				break
			}
		}
	}
	return ps, nil
}

// bytesShare is path's share of the bytes acked over all the flow's
// subflows between w.From and w.To: per subflow, its last count at or
// before w.To minus its last count at or before w.From.
func bytesShare(samples []SubflowSample, path string, w Window) float64 {
	start, end := map[int]uint64{}, map[int]uint64{}
	pathOf := map[int]string{}
	for _, s := range samples {
		pathOf[s.Subflow] = s.Path
		if s.T <= w.From {
			start[s.Subflow] = s.BytesAcked
		}
		if s.T <= w.To {
			end[s.Subflow] = s.BytesAcked
		}
	}
	var on, total float64
	for sub, e := range end {
		d := float64(e - min(e, start[sub]))
		total += d
		if pathOf[sub] == path {
			on += d
		}
	}
	if total == 0 {
		return math.NaN()
	}
	return on / total
}

// pathQueue is the mean srtt minus min RTT of the samples on path in w.
func pathQueue(samples []SubflowSample, path string, w Window) float64 {
	var on []SubflowSample
	for _, s := range samples {
		if s.Path == path {
			on = append(on, s)
		}
	}
	if ms, ok := meanQueue(on, w.From, w.To); ok {
		return ms
	}
	return math.NaN()
}

type point struct{ t, v float64 }

// rateShares is, per sample time, the rate (cwnd/srtt) of the subflows on
// path over that of all the flow's subflows.
func rateShares(samples []SubflowSample, path string) []point {
	on, all := map[float64]float64{}, map[float64]float64{}
	for _, s := range samples {
		if s.SRTTMs <= 0 {
			continue
		}
		r := float64(s.Cwnd) / s.SRTTMs
		all[s.T] += r
		if s.Path == path {
			on[s.T] += r
		}
	}
	var out []point
	for t, a := range all {
		if a > 0 {
			out = append(out, point{t, on[t] / a})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].t < out[j].t })
	return out
}

func meanIn(series []point, w Window) float64 {
	var sum float64
	n := 0
	for _, x := range series {
		if x.t >= w.From && x.t <= w.To {
			sum += x.v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// WritePathShifts prints the measurements as a Markdown table, one row per
// repetition and, per case, a row of means ± sample sd.
func WritePathShifts(w io.Writer, sp ShiftSpec, shifts []PathShift) error {
	var paths []string
	seen := map[string]bool{}
	for _, ps := range shifts {
		for p := range ps.QueueBefore {
			seen[p] = true
		}
	}
	paths = sortedKeys(seen)
	var b strings.Builder
	fmt.Fprintf(&b, "| case | rep | bytes on %s, %v | bytes on %s, %v | half the shift after %g s (s) |", sp.Path, sp.Before, sp.Path, sp.After, sp.At)
	for _, p := range paths {
		fmt.Fprintf(&b, " queue on %s, before (ms) | queue on %s, after (ms) |", p, p)
	}
	b.WriteString("\n|---|---|---|---|---|")
	b.WriteString(strings.Repeat("---|---|", len(paths)))
	b.WriteString("\n")
	row := func(c, rep string, v []float64) {
		fmt.Fprintf(&b, "| %s | %s |", c, rep)
		for _, x := range v {
			b.WriteString(" " + x3(x) + " |")
		}
		b.WriteString("\n")
	}
	cols := func(ps PathShift) []float64 {
		v := []float64{ps.BytesBefore, ps.BytesAfter, ps.HalfS}
		for _, p := range paths {
			v = append(v, ps.QueueBefore[p], ps.QueueAfter[p])
		}
		return v
	}
	for i := 0; i < len(shifts); {
		j := i
		var per [][]float64
		for ; j < len(shifts) && shifts[j].Case == shifts[i].Case; j++ {
			v := cols(shifts[j])
			per = append(per, v)
			row(shifts[j].Case, fmt.Sprint(shifts[j].Rep), v)
		}
		fmt.Fprintf(&b, "| **%s** | mean ± sd |", shifts[i].Case)
		for k := range per[0] {
			var vals []float64
			for _, v := range per {
				if !math.IsNaN(v[k]) {
					vals = append(vals, v[k])
				}
			}
			st := newStat(vals)
			switch {
			case len(vals) == 0:
				b.WriteString(" none |")
			case len(vals) < len(per):
				fmt.Fprintf(&b, " %s ± %s (%d of %d) |", x3(st.Mean), x3(st.SD), len(vals), len(per))
			default:
				fmt.Fprintf(&b, " %s ± %s |", x3(st.Mean), x3(st.SD))
			}
		}
		b.WriteString("\n")
		i = j
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func x3(v float64) string {
	if math.IsNaN(v) {
		return "none"
	}
	return fmt.Sprintf("%.3g", v)
}
