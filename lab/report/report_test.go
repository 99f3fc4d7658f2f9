// SPDX-License-Identifier: Apache-2.0

package report

import (
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
)

func TestCharts(t *testing.T) {
	for name, svg := range map[string][]byte{
		"line": LineChart{Title: "a <title> & more", XLabel: "t", YLabel: "y", Series: []Series{
			{Name: "one", X: []float64{0, 1, 2}, Y: []float64{1, 3, math.NaN()}, Err: []float64{0.5, 0.1, 0}, Markers: true},
			{Name: "two", X: []float64{0, 2}, Y: []float64{2, 2}, Dashed: true},
		}}.SVG(),
		"categorical": LineChart{XTicks: []string{"a", "b"}, Series: []Series{{Name: "s", X: []float64{0, 1}, Y: []float64{1, 2}}}}.SVG(),
		"empty":       LineChart{Title: "nothing"}.SVG(),
		"bars": BarChart{Title: "b", YLabel: "Mbit/s", Categories: []string{"x", "y"}, Series: []BarSeries{
			{Name: "ours", Values: []float64{1, math.NaN()}, Err: []float64{0.2, math.NaN()}, Ref: []float64{1.5, math.NaN()}},
			{Name: "more", Values: []float64{2, 3}},
		}}.SVG(),
	} {
		var v any
		if err := xml.Unmarshal(svg, &v); err != nil {
			t.Errorf("%s: not well-formed XML: %v", name, err)
		}
		if strings.Contains(string(svg), "NaN") || strings.Contains(string(svg), "Inf") {
			t.Errorf("%s: NaN or Inf in the SVG", name)
		}
	}
}

func TestNiceTicksCover(t *testing.T) {
	for _, r := range [][2]float64{{0, 13.67}, {0, 1}, {0.3, 0.31}, {0, 1234}, {-2, 5}} {
		ts := niceTicks(r[0], r[1], 6)
		if ts[0] > r[0] || ts[len(ts)-1] < r[1] {
			t.Errorf("ticks %v do not cover %v", ts, r)
		}
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	sum := &Summary{Scenario: "sc", Variants: []string{"lia", "rsf"}, Cases: []CaseSummary{
		{ID: "lia", Variant: "lia", Groups: []GroupSummary{{Flow: "mp", Metrics: map[string]Stat{"throughput_mbps_mean": newStat([]float64{1, 2, 3})}}}},
		{ID: "rsf", Variant: "rsf", Groups: []GroupSummary{{Flow: "mp", Metrics: map[string]Stat{"throughput_mbps_mean": newStat([]float64{4})}}}},
	}}
	if err := os.MkdirAll(filepath.Join(res, "sc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(filepath.Join(res, "sc", "summary.json"), sum); err != nil {
		t.Fatal(err)
	}
	page := "# Page\n\nprose before\n\n<!-- lab:table t1 -->\nold table\n<!-- /lab:table -->\n\nprose after\n"
	if err := os.WriteFile(filepath.Join(dir, "page.md"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `page: page.md
data: data
tables:
  - name: t1
    caption: Throughput
    metric: throughput_mbps_mean
    flow: mp
    unit: Mbit/s
    columns: [{variant: lia, label: LIA}, {variant: rsf, label: RSF}]
    rows: [{label: row, scenario: sc, paper: [0.88, null]}]
    chart: charts/t1.svg
`
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Report(filepath.Join(dir, "spec.yaml"), res); err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "page.md"))
	for _, w := range []string{"prose before", "prose after", "| row | 2.00 ± 1.00 | 0.88 | 4.00 | – |", "![Throughput](charts/t1.svg)"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("page lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(string(out), "old table") {
		t.Error("the old table was kept")
	}
	for _, p := range []string{"charts/t1.svg", "data/sc/summary.json"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Error(err)
		}
	}
	// Without the raw results the committed copy is used.
	if _, err := Report(filepath.Join(dir, "spec.yaml"), filepath.Join(dir, "nowhere")); err != nil {
		t.Errorf("from the data copy: %v", err)
	}
}

// Re-running some cases (--case) keeps the other cases of the earlier run.
func TestMergeSummary(t *testing.T) {
	// The cases of scenario's test file "good" (variants lia and rsf, sweep
	// 10ms and 40ms), in the file's order.
	f := &scenario.File{Cases: []scenario.Case{{ID: "lia@10ms", Variant: "lia"}, {ID: "lia@40ms", Variant: "lia"},
		{ID: "rsf@10ms", Variant: "rsf"}, {ID: "rsf@40ms", Variant: "rsf"}}}
	dir := t.TempDir()
	old := &Summary{Scenario: "t", Run: "aaaaaa", Cases: []CaseSummary{{ID: "lia@10ms", Variant: "lia"}, {ID: "rsf@40ms", Variant: "rsf"}, {ID: "lia@40ms", Variant: "lia"}}}
	if err := writeJSON(filepath.Join(dir, "summary.json"), old); err != nil {
		t.Fatal(err)
	}
	sum := &Summary{Scenario: "t", Run: "bbbbbb", Cases: []CaseSummary{{ID: "lia@40ms", Variant: "lia", Sweep: "new"}, {ID: "rsf@10ms", Variant: "rsf"}}}
	MergeSummary(filepath.Join(dir, "summary.json"), f, sum)
	var ids []string
	for _, c := range sum.Cases {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, " ") != "lia@10ms lia@40ms rsf@10ms rsf@40ms" || sum.Case("lia@40ms").Sweep != "new" {
		t.Errorf("merged cases %v (%+v)", ids, sum.Cases)
	}
	if len(sum.Merged) != 1 || sum.Merged[0] != "aaaaaa" || strings.Join(sum.Variants, ",") != "lia,rsf" {
		t.Errorf("merged %v variants %v", sum.Merged, sum.Variants)
	}
}

// Only an implausible cwnd marks a repetition: an implausible ssthresh is
// what the window guard repairs, and a sample can catch it before that.
func TestFindAnomalies(t *testing.T) {
	samples := []SubflowSample{
		{T: 1.7, Flow: "mp", Subflow: 1, Path: "b", Cwnd: 10, Ssthresh: 667073280},
		{T: 1.8, Flow: "mp", Subflow: 1, Path: "b", Cwnd: 6, Ssthresh: 5},
		{T: 0.5, Flow: "tcp", Cwnd: 20, Ssthresh: 0x7fffffff},
		{T: 26.5, Flow: "blown", Subflow: 1, Path: "ap", Cwnd: 668121856, Ssthresh: 668121856},
	}
	an := FindAnomalies(samples)
	if an["mp"] != "" || an["tcp"] != "" {
		t.Errorf("flagged a repaired ssthresh or an infinite one: %v", an)
	}
	if !strings.Contains(an["blown"], "cwnd 668121856") {
		t.Errorf("missed a blown-up window: %v", an)
	}
}

func TestRetransAfter(t *testing.T) {
	s := []SubflowSample{
		{T: 1, Flow: "mp", Subflow: 0, Source: "both", Retrans: 5},
		{T: 2, Flow: "mp", Subflow: 0, Source: "both", Retrans: 7},
		{T: 3, Flow: "mp", Subflow: 0, Source: "both", Retrans: 9},
		{T: 3, Flow: "mp", Subflow: 1, Source: "both", Retrans: 4},  // joined after 2 s
		{T: 3, Flow: "mp", Subflow: 1, Source: "bpf", Retrans: 100}, // the map's view: not mixed in
		{T: 3, Flow: "other", Subflow: 0, Source: "kernel", Retrans: 50},
	}
	if got := retransAfter(s, "mp", 2); got != 2+4 {
		t.Errorf("after 2 s: %d, want 6 (2 on the first subflow, 4 on the late one)", got)
	}
	if got := retransAfter(s, "mp", 0); got != 9+4 {
		t.Errorf("after 0 s: %d, want 13", got)
	}
	bpfOnly := []SubflowSample{{T: 1, Flow: "x", Source: "bpf", Retrans: 3}, {T: 4, Flow: "x", Source: "bpf", Retrans: 8}}
	if got := retransAfter(bpfOnly, "x", 2); got != 5 {
		t.Errorf("map-only samples: %d, want 5", got)
	}
}
