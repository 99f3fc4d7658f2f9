// Package report turns the results of scenario runs into summaries,
// tables and charts. It needs no root and no kernel: everything it reads
// and writes is files (what pkg/lab/runner wrote, or committed copies).
package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mptcp-cc/mptcp-cc/internal/strictyaml"
	"github.com/mptcp-cc/mptcp-cc/pkg/lab/scenario"
)

// A report spec turns the summaries of several scenario runs into tables
// (ours next to the paper's numbers) and bar charts, and writes them into
// a Markdown page between markers:
//
//	<!-- lab:table NAME -->
//	(generated)
//	<!-- /lab:table -->
//
// Everything outside the markers (setup, commands, the honest comparison)
// is written by hand and kept.
type ReportSpec struct {
	Title string `yaml:"title"`
	// Page is the Markdown page to update; Data the directory that keeps a
	// copy of every scenario's summary (summary.json, summary.csv,
	// scenario.yaml, charts) next to it. Both relative to the spec.
	Page   string         `yaml:"page"`
	Data   string         `yaml:"data"`
	Tables []ReportTable  `yaml:"tables"`
	Series []ReportSeries `yaml:"series"`
}

// ReportSeries is a time-series chart that puts one repetition of several
// cases side by side (e.g. the sum of cwnd with and without LISA). It
// needs the raw results (the per-repetition directories).
type ReportSeries struct {
	Chart    string `yaml:"chart"` // SVG file name, next to the page
	Title    string `yaml:"title"`
	Scenario string `yaml:"scenario"`
	Flow     string `yaml:"flow"`
	Rep      int    `yaml:"rep"`
	// What: cwnd_sum (sum over the flow's subflows), cwnd (each subflow) or
	// throughput (receiver goodput).
	What  string `yaml:"what"`
	Lines []struct {
		Case  string `yaml:"case"`
		Label string `yaml:"label"`
	} `yaml:"lines"`
}

// ReportTable is one table (and chart).
type ReportTable struct {
	Name    string  `yaml:"name"`
	Caption string  `yaml:"caption"`
	Metric  string  `yaml:"metric"` // a group metric, e.g. throughput_mbps_mean
	Flow    string  `yaml:"flow"`   // default flow (group) of every row
	Unit    string  `yaml:"unit"`
	Digits  int     `yaml:"digits"`
	Scale   float64 `yaml:"scale"` // multiplies our values (e.g. to normalise scaled rates back); 0 means 1
	// Columns are variants of the scenarios.
	Columns []struct {
		Variant string `yaml:"variant"`
		Label   string `yaml:"label"`
	} `yaml:"columns"`
	// ExtraColumns are paper-only columns (e.g. theoretical values).
	ExtraColumns []string    `yaml:"extra_columns"`
	Rows         []ReportRow `yaml:"rows"`
	// SweepRows, with one scenario, makes one row per sweep value.
	SweepRows *struct {
		Scenario string `yaml:"scenario"`
		Flow     string `yaml:"flow"`
		Label    string `yaml:"label"` // printf format for the value, e.g. "%s"
	} `yaml:"sweep_rows"`
	Chart      string `yaml:"chart"`       // SVG file name (next to the page); empty: no chart
	ChartTitle string `yaml:"chart_title"` // default: caption
	NoPaper    bool   `yaml:"no_paper"`    // the paper has no numbers for this table
}

// ReportRow is one row: a scenario (and flow) whose variants fill the
// columns.
type ReportRow struct {
	Label    string     `yaml:"label"`
	Scenario string     `yaml:"scenario"`
	Flow     string     `yaml:"flow"`
	Sweep    string     `yaml:"sweep"`
	Paper    []*float64 `yaml:"paper"` // per column; null: the paper has none
	Extra    []string   `yaml:"extra"` // per extra column
}

// Report renders a spec from the results under resultsDir (what `run
// --out` wrote); scenarios missing there are read from the spec's data
// directory (the committed copies), so tables can be regenerated without
// re-running. It returns the files it wrote.
func Report(specPath, resultsDir string) ([]string, error) {
	src, err := os.ReadFile(specPath)
	if err != nil {
		return nil, err
	}
	var spec ReportSpec
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if probs, _ := strictyaml.Decode(&doc, "", &spec); len(probs) > 0 {
		return nil, strictyaml.Err(specPath, probs)
	}
	base := filepath.Dir(specPath)
	page := filepath.Join(base, spec.Page)
	data := filepath.Join(base, spec.Data)
	summaries := map[string]*Summary{}
	var written []string
	var errs []error
	load := func(name string) (*Summary, error) {
		if s, ok := summaries[name]; ok {
			return s, nil
		}
		fresh := filepath.Join(resultsDir, name)
		s, err := ReadSummary(filepath.Join(fresh, "summary.json"))
		if err == nil && spec.Data != "" {
			// Keep a copy of the summary next to the page.
			dst := filepath.Join(data, name)
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return nil, err
			}
			for _, f := range []string{"summary.json", "summary.csv", "scenario.yaml", "throughput.svg", "completion.svg", "retrans.svg"} {
				b, rerr := os.ReadFile(filepath.Join(fresh, f))
				if rerr != nil {
					continue
				}
				if werr := os.WriteFile(filepath.Join(dst, f), b, 0o644); werr != nil {
					return nil, werr
				}
				written = append(written, filepath.Join(dst, f))
			}
		}
		if err != nil && spec.Data != "" {
			s, err = ReadSummary(filepath.Join(data, name, "summary.json"))
		}
		if err != nil {
			return nil, err
		}
		summaries[name] = s
		return s, nil
	}
	pageSrc, err := os.ReadFile(page)
	if err != nil {
		return nil, fmt.Errorf("the page %s must exist (with the prose around the tables): %w", page, err)
	}
	for _, t := range spec.Tables {
		md, chart, err := renderTable(t, load)
		if err != nil {
			errs = append(errs, fmt.Errorf("table %s: %w", t.Name, err))
			continue
		}
		if t.Chart != "" && chart != nil {
			p := filepath.Join(filepath.Dir(page), t.Chart)
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, chart, 0o644); err != nil {
				errs = append(errs, err)
			} else {
				written = append(written, p)
				md += fmt.Sprintf("\n![%s](%s)\n", t.Caption, t.Chart)
			}
		}
		pageSrc = replaceMarked(pageSrc, t.Name, md)
	}
	for _, sr := range spec.Series {
		svg, err := renderSeries(sr, resultsDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("series %s: %w", sr.Chart, err))
			continue
		}
		p := filepath.Join(filepath.Dir(page), sr.Chart)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, svg, 0o644); err != nil {
			errs = append(errs, err)
			continue
		}
		written = append(written, p)
	}
	if err := os.WriteFile(page, pageSrc, 0o644); err != nil {
		errs = append(errs, err)
	} else {
		written = append(written, page)
	}
	return written, errors.Join(errs...)
}

func replaceMarked(src []byte, name, body string) []byte {
	open := "<!-- lab:table " + name + " -->"
	closeM := "<!-- /lab:table -->"
	i := bytes.Index(src, []byte(open))
	if i < 0 {
		return append(src, []byte("\n"+open+"\n"+body+closeM+"\n")...)
	}
	j := bytes.Index(src[i:], []byte(closeM))
	if j < 0 {
		return append(src[:i+len(open)], []byte("\n"+body+closeM+"\n")...)
	}
	var out []byte
	out = append(out, src[:i+len(open)]...)
	out = append(out, '\n')
	out = append(out, body...)
	out = append(out, src[i+j:]...)
	return out
}

type cell struct {
	mean, sd float64
	n        int
	paper    float64
}

func renderTable(t ReportTable, load func(string) (*Summary, error)) (string, []byte, error) {
	if t.Metric == "" {
		return "", nil, errors.New("metric is required")
	}
	scale := t.Scale
	if scale == 0 {
		scale = 1
	}
	digits := t.Digits
	if digits == 0 {
		digits = 2
	}
	rows := t.Rows
	if t.SweepRows != nil {
		s, err := load(t.SweepRows.Scenario)
		if err != nil {
			return "", nil, err
		}
		for _, v := range s.SweepValues {
			label := v
			if t.SweepRows.Label != "" {
				label = fmt.Sprintf(t.SweepRows.Label, v)
			}
			rows = append(rows, ReportRow{Label: label, Scenario: t.SweepRows.Scenario, Flow: t.SweepRows.Flow, Sweep: v})
		}
	}
	cells := make([][]cell, len(rows))
	var reps []int
	var excluded []string
	for i, r := range rows {
		s, err := load(r.Scenario)
		if err != nil {
			return "", nil, err
		}
		flow := r.Flow
		if flow == "" {
			flow = t.Flow
		}
		for ci, c := range t.Columns {
			id := c.Variant
			if r.Sweep != "" {
				id += "@" + scenario.Sanitize(r.Sweep)
			}
			x := cell{mean: math.NaN(), sd: math.NaN(), paper: math.NaN()}
			if ci < len(r.Paper) && r.Paper[ci] != nil {
				x.paper = *r.Paper[ci]
			}
			if cs := s.Case(id); cs != nil {
				for _, x := range cs.Excluded {
					note := fmt.Sprintf("%s %s rep %d", r.Scenario, cs.ID, x.Rep)
					if !slices.Contains(excluded, note) {
						excluded = append(excluded, note)
					}
				}
				if g := cs.Group(flow); g != nil {
					st := g.Metrics[t.Metric]
					x.mean, x.sd, x.n = st.Mean*scale, st.SD*scale, st.N
					reps = append(reps, st.N)
				}
			}
			cells[i] = append(cells[i], x)
		}
	}
	num := func(v float64) string {
		if math.IsNaN(v) {
			return "–"
		}
		return strconv.FormatFloat(v, 'f', digits, 64)
	}
	var b strings.Builder
	if t.Caption != "" {
		fmt.Fprintf(&b, "**%s**", t.Caption)
		if t.Unit != "" {
			fmt.Fprintf(&b, " (%s)", t.Unit)
		}
		b.WriteString("\n\n")
	}
	b.WriteString("| |")
	for _, c := range t.Columns {
		label := c.Label
		if label == "" {
			label = c.Variant
		}
		if t.NoPaper {
			fmt.Fprintf(&b, " %s |", label)
		} else {
			fmt.Fprintf(&b, " %s ours | %s paper |", label, label)
		}
	}
	for _, x := range t.ExtraColumns {
		fmt.Fprintf(&b, " %s |", x)
	}
	b.WriteString("\n|---|")
	per := 2
	if t.NoPaper {
		per = 1
	}
	b.WriteString(strings.Repeat("---:|", per*len(t.Columns)+len(t.ExtraColumns)))
	b.WriteString("\n")
	for i, r := range rows {
		fmt.Fprintf(&b, "| %s |", r.Label)
		for _, c := range cells[i] {
			ours := num(c.mean)
			if !math.IsNaN(c.mean) && c.n > 1 {
				ours += " ± " + num(c.sd)
			}
			if t.NoPaper {
				fmt.Fprintf(&b, " %s |", ours)
			} else {
				fmt.Fprintf(&b, " %s | %s |", ours, num(c.paper))
			}
		}
		for k := range t.ExtraColumns {
			v := ""
			if k < len(r.Extra) {
				v = r.Extra[k]
			}
			fmt.Fprintf(&b, " %s |", v)
		}
		b.WriteString("\n")
	}
	if len(reps) > 0 {
		lo, hi := reps[0], reps[0]
		for _, n := range reps {
			lo, hi = min(lo, n), max(hi, n)
		}
		nrep := strconv.Itoa(lo)
		if hi != lo {
			nrep = fmt.Sprintf("%d to %d", lo, hi)
		}
		fmt.Fprintf(&b, "\nOurs: mean ± sample standard deviation over %s repetitions (`%s`).\n", nrep, t.Metric)
	}
	if len(excluded) > 0 {
		fmt.Fprintf(&b, "Left out because a subflow's window blew up (a congestion-control bug, `anomaly` in the results): %s.\n", strings.Join(excluded, "; "))
	}
	if t.Chart == "" {
		return b.String(), nil, nil
	}
	bc := BarChart{Title: t.ChartTitle, YLabel: t.Unit}
	if bc.Title == "" {
		bc.Title = t.Caption
	}
	for _, r := range rows {
		bc.Categories = append(bc.Categories, r.Label)
	}
	for ci, c := range t.Columns {
		label := c.Label
		if label == "" {
			label = c.Variant
		}
		bs := BarSeries{Name: label}
		for i := range rows {
			bs.Values = append(bs.Values, cells[i][ci].mean)
			bs.Err = append(bs.Err, cells[i][ci].sd)
			bs.Ref = append(bs.Ref, cells[i][ci].paper)
		}
		bc.Series = append(bc.Series, bs)
	}
	return b.String(), bc.SVG(), nil
}

func renderSeries(sr ReportSeries, resultsDir string) ([]byte, error) {
	lc := LineChart{Title: sr.Title, XLabel: "time since the flow started (s)"}
	switch sr.What {
	case "cwnd_sum", "":
		lc.YLabel = "sum of cwnd (segments)"
	case "cwnd":
		lc.YLabel = "cwnd (segments)"
	case "throughput":
		lc.YLabel = "Mbit/s"
	default:
		return nil, fmt.Errorf("what: %q: want cwnd_sum, cwnd or throughput", sr.What)
	}
	for _, l := range sr.Lines {
		dir := filepath.Join(resultsDir, sr.Scenario, sanitizeCase(l.Case), "rep"+strconv.Itoa(sr.Rep))
		r, err := readRepRaw(dir)
		if err != nil {
			return nil, err
		}
		var start float64
		for _, f := range r.Flows {
			if f.Name == sr.Flow {
				start = f.StartS
			}
		}
		label := l.Label
		if label == "" {
			label = l.Case
		}
		var ser []Series
		switch sr.What {
		case "cwnd_sum", "":
			_, sums := cwndSeries(r)
			for _, s := range sums {
				if s.Name == sr.Flow {
					s.Name = label
					ser = append(ser, s)
				}
			}
		case "cwnd":
			per, _ := cwndSeries(r)
			for _, s := range per {
				if groupOf(s.Name) == sr.Flow || strings.HasPrefix(s.Name, sr.Flow+" ") {
					s.Name = label + strings.TrimPrefix(s.Name, sr.Flow)
					ser = append(ser, s)
				}
			}
		case "throughput":
			for _, s := range throughputSeries(r, 0) {
				if s.Name == sr.Flow {
					s.Name = label
					ser = append(ser, s)
				}
			}
		}
		if len(ser) == 0 {
			return nil, fmt.Errorf("%s: no samples of flow %q", dir, sr.Flow)
		}
		for i := range ser {
			for j := range ser[i].X {
				ser[i].X[j] -= start
			}
		}
		lc.Series = append(lc.Series, ser...)
	}
	return lc.SVG(), nil
}

// sanitizeCase maps a case id as written (variant@value) to its directory.
func sanitizeCase(id string) string {
	v, sw, ok := strings.Cut(id, "@")
	if !ok {
		return id
	}
	return v + "@" + scenario.Sanitize(sw)
}

// readRepRaw reads a repetition's flows.csv-equivalent result.json and its
// subflows.csv back.
func readRepRaw(dir string) (*RepResult, error) {
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, fmt.Errorf("%w (the raw results of the run are needed for time series)", err)
	}
	var r RepResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, "subflows.csv"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	for _, row := range rows[1:] {
		if len(row) < 10 {
			continue
		}
		t, _ := strconv.ParseFloat(row[0], 64)
		sub, _ := strconv.Atoi(row[2])
		cw, _ := strconv.ParseUint(row[8], 10, 32)
		ss, _ := strconv.ParseUint(row[9], 10, 32)
		s := SubflowSample{T: t, Flow: row[1], Subflow: sub, Path: row[3], Source: row[7], Cwnd: uint32(cw), Ssthresh: uint32(ss)}
		if len(row) > 14 {
			s.Retrans, _ = strconv.ParseUint(row[14], 10, 64)
		}
		r.Samples = append(r.Samples, s)
	}
	g, err := os.Open(filepath.Join(dir, "goodput.csv"))
	if err == nil {
		defer g.Close()
		rows, err := csv.NewReader(g).ReadAll()
		if err == nil {
			for _, row := range rows[1:] {
				if len(row) < 3 {
					continue
				}
				t, _ := strconv.ParseFloat(row[0], 64)
				by, _ := strconv.ParseInt(row[2], 10, 64)
				r.Goodput = append(r.Goodput, GoodputSample{T: t, Flow: row[1], Bytes: by})
			}
		}
	}
	return &r, nil
}

// Summarize rebuilds a scenario's summary (summary.json, summary.csv and
// the charts) from the raw repetitions under dir (DIR/<scenario name> of
// `run --out DIR`), e.g. after the metric definitions or the anomaly check
// changed. Run metadata is kept from the existing summary.
func Summarize(dir string) (*Summary, error) {
	old, err := ReadSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, err
	}
	src := filepath.Join(dir, "scenario.yaml")
	if _, err := os.Stat(old.File); err == nil {
		src = old.File // relative traces resolve against the original
	}
	f, err := scenario.Load(src)
	if err != nil {
		return nil, err
	}
	sum := *old
	sum.Cases = nil
	sum.Failed = 0
	sum.SweepName, sum.SweepValues = f.SweepName, f.SweepVals
	for _, c := range f.Cases {
		if old.Case(c.ID) == nil {
			continue
		}
		dirs, _ := filepath.Glob(filepath.Join(dir, c.ID, "rep*"))
		var reps []*RepResult
		for _, d := range dirs {
			r, err := readRepRaw(d)
			if err != nil {
				return nil, err
			}
			// Judged again by today's rule, not the one the run had.
			an := FindAnomalies(r.Samples)
			for i := range r.Flows {
				r.Flows[i].Anomaly = an[r.Flows[i].Name]
			}
			r.Dir, _ = filepath.Rel(dir, d)
			if r.Error != "" {
				sum.Failed++
			}
			reps = append(reps, r)
		}
		sort.Slice(reps, func(i, j int) bool { return reps[i].Rep < reps[j].Rep })
		sum.Cases = append(sum.Cases, SummarizeCase(c, reps))
	}
	return &sum, WriteSummary(dir, &sum)
}
