// SPDX-License-Identifier: Apache-2.0

// Package report turns the results of scenario runs into summaries,
// tables and charts. It needs no root and no kernel: everything it reads
// and writes is files (what lab/runner wrote, or committed copies).
package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mptcp-cc/mptcp-cc/internal/strictyaml"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
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
//
// Page is the Markdown page to update; Data the directory that keeps a copy
// of every scenario's summary (summary.json, summary.csv, scenario.yaml,
// charts) next to it. Both are relative to the spec.
type ReportSpec struct {
	Title, Page, Data string
	Tables            []ReportTable  `yaml:"tables"`
	Series            []ReportSeries `yaml:"series"`
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

// Report renders a spec from the results under resultsDir (what `run
// --out` wrote); scenarios missing there are read from the spec's data
// directory (the committed copies), so tables can be regenerated without
// re-running. It returns the files it wrote.
func Report(specPath, resultsDir string) ([]string, error) {
	spec, err := readSpec(specPath)
	if err != nil {
		return nil, err
	}
	base := filepath.Dir(specPath)
	page := filepath.Join(base, spec.Page)
	sums := &summaries{results: resultsDir, byName: map[string]*Summary{}}
	if spec.Data != "" {
		sums.data = filepath.Join(base, spec.Data)
	}
	pageSrc, err := os.ReadFile(page)
	if err != nil {
		return nil, fmt.Errorf("the page %s must exist (with the prose around the tables): %w", page, err)
	}
	var errs []error
	for _, t := range spec.Tables {
		md, chart, err := renderTable(t, sums.load)
		if err != nil {
			errs = append(errs, fmt.Errorf("table %s: %w", t.Name, err))
			continue
		}
		if md, err = sums.chart(t, chart, md, filepath.Dir(page)); err != nil {
			errs = append(errs, err)
		}
		pageSrc = replaceMarked(pageSrc, t.Name, md)
	}
	for _, sr := range spec.Series {
		if err := sums.series(sr, filepath.Dir(page)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.WriteFile(page, pageSrc, 0o644); err != nil {
		errs = append(errs, err)
	} else {
		sums.written = append(sums.written, page)
	}
	return sums.written, errors.Join(errs...)
}

// readSpec reads a report spec strictly: a misspelt key is an error naming
// the line and the keys that exist.
func readSpec(path string) (*ReportSpec, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	var spec ReportSpec
	if probs, _ := strictyaml.Decode(&doc, "", &spec); len(probs) > 0 {
		return nil, strictyaml.Err(path, probs)
	}
	return &spec, nil
}

// summaries loads the scenario summaries a report needs, once each, and
// keeps the files it wrote.
type summaries struct {
	results string // the fresh results (run --out)
	data    string // the committed copies next to the page; "" for none
	byName  map[string]*Summary
	written []string
}

// load reads a scenario's summary from the fresh results, copying it into
// the data directory, or else from the data directory.
func (ss *summaries) load(name string) (*Summary, error) {
	if s, ok := ss.byName[name]; ok {
		return s, nil
	}
	fresh := filepath.Join(ss.results, name)
	s, err := ReadSummary(filepath.Join(fresh, "summary.json"))
	if err == nil && ss.data != "" {
		if err := ss.keep(fresh, filepath.Join(ss.data, name)); err != nil {
			return nil, err
		}
	}
	if err != nil && ss.data != "" {
		s, err = ReadSummary(filepath.Join(ss.data, name, "summary.json"))
	}
	if err != nil {
		return nil, err
	}
	ss.byName[name] = s
	return s, nil
}

// keep copies a scenario's summary files from fresh to dst.
func (ss *summaries) keep(fresh, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"summary.json", "summary.csv", "scenario.yaml", "throughput.svg", "completion.svg", "retrans.svg"} {
		b, rerr := os.ReadFile(filepath.Join(fresh, f))
		if rerr != nil {
			continue
		}
		if werr := os.WriteFile(filepath.Join(dst, f), b, 0o644); werr != nil {
			return werr
		}
		ss.written = append(ss.written, filepath.Join(dst, f))
	}
	return nil
}

// chart writes a table's chart into dir and returns the table's Markdown
// md with the chart under it.
func (ss *summaries) chart(t ReportTable, chart []byte, md, dir string) (string, error) {
	if t.Chart != "" && chart != nil {
		p := filepath.Join(dir, t.Chart)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, chart, 0o644); err != nil {
			return md, err
		}
		ss.written = append(ss.written, p)
		md += fmt.Sprintf("\n![%s](%s)\n", t.Caption, t.Chart)
	}
	return md, nil
}

// series renders a time-series chart into dir.
func (ss *summaries) series(sr ReportSeries, dir string) error {
	svg, err := renderSeries(sr, ss.results)
	if err != nil {
		return fmt.Errorf("series %s: %w", sr.Chart, err)
	}
	p := filepath.Join(dir, sr.Chart)
	_ = os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, svg, 0o644); err != nil {
		return err
	}
	ss.written = append(ss.written, p)
	return nil
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
