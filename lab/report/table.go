// SPDX-License-Identifier: Apache-2.0

package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
)

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
	Columns []ReportColumn `yaml:"columns"`
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

type cell struct {
	mean, sd float64
	n        int
	paper    float64
}

// tableData is a table's rows and cells, with the repetition counts
// behind them and the repetitions left out.
type tableData struct {
	rows     []ReportRow
	cells    [][]cell
	reps     []int
	excluded []string
}

func renderTable(t ReportTable, load func(string) (*Summary, error)) (string, []byte, error) {
	if t.Metric == "" {
		return "", nil, errors.New("metric is required")
	}
	rows, err := tableRows(t, load)
	if err != nil {
		return "", nil, err
	}
	d := &tableData{rows: rows}
	if err := d.fill(t, load); err != nil {
		return "", nil, err
	}
	md := d.markdown(t)
	if t.Chart == "" {
		return md, nil, nil
	}
	return md, d.chart(t), nil
}

// tableRows are the table's rows, with one per sweep value for sweep_rows.
func tableRows(t ReportTable, load func(string) (*Summary, error)) ([]ReportRow, error) {
	rows := t.Rows
	if t.SweepRows == nil {
		return rows, nil
	}
	s, err := load(t.SweepRows.Scenario)
	if err != nil {
		return nil, err
	}
	for _, v := range s.SweepValues {
		label := v
		if t.SweepRows.Label != "" {
			label = fmt.Sprintf(t.SweepRows.Label, v)
		}
		rows = append(rows, ReportRow{Label: label, Scenario: t.SweepRows.Scenario, Flow: t.SweepRows.Flow, Sweep: v})
	}
	return rows, nil
}

// fill reads every cell (row x column) from the summaries.
func (d *tableData) fill(t ReportTable, load func(string) (*Summary, error)) error {
	scale := t.Scale
	if scale == 0 {
		scale = 1
	}
	d.cells = make([][]cell, len(d.rows))
	for i, r := range d.rows {
		s, err := load(r.Scenario)
		if err != nil {
			return err
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
				d.note(r.Scenario, cs)
				if g := cs.Group(flow); g != nil {
					st := g.Metrics[t.Metric]
					x.mean, x.sd, x.n = st.Mean*scale, st.SD*scale, st.N
					d.reps = append(d.reps, st.N)
				}
			}
			d.cells[i] = append(d.cells[i], x)
		}
	}
	return nil
}

// note records the repetitions of a case that were left out.
func (d *tableData) note(sc string, cs *CaseSummary) {
	for _, x := range cs.Excluded {
		note := fmt.Sprintf("%s %s rep %d", sc, cs.ID, x.Rep)
		if !slices.Contains(d.excluded, note) {
			d.excluded = append(d.excluded, note)
		}
	}
}

// ReportColumn is a variant of the rows' scenarios, and its heading.
type ReportColumn struct {
	Variant string `yaml:"variant"`
	Label   string `yaml:"label"`
}

func columnLabel(c ReportColumn) string {
	if c.Label == "" {
		return c.Variant
	}
	return c.Label
}

// markdown is the table in Markdown, with its caption and the notes on
// repetitions under it.
func (d *tableData) markdown(t ReportTable) string {
	var b strings.Builder
	if t.Caption != "" {
		fmt.Fprintf(&b, "**%s**", t.Caption)
		if t.Unit != "" {
			fmt.Fprintf(&b, " (%s)", t.Unit)
		}
		b.WriteString("\n\n")
	}
	writeHeader(&b, t)
	for i, r := range d.rows {
		d.writeRow(&b, t, r, d.cells[i])
	}
	d.writeNotes(&b, t)
	return b.String()
}

func writeHeader(b *strings.Builder, t ReportTable) {
	b.WriteString("| |")
	for _, c := range t.Columns {
		label := columnLabel(c)
		if t.NoPaper {
			fmt.Fprintf(b, " %s |", label)
		} else {
			fmt.Fprintf(b, " %s ours | %s paper |", label, label)
		}
	}
	for _, x := range t.ExtraColumns {
		fmt.Fprintf(b, " %s |", x)
	}
	b.WriteString("\n|---|")
	per := 2
	if t.NoPaper {
		per = 1
	}
	b.WriteString(strings.Repeat("---:|", per*len(t.Columns)+len(t.ExtraColumns)))
	b.WriteString("\n")
}

func (d *tableData) writeRow(b *strings.Builder, t ReportTable, r ReportRow, cells []cell) {
	digits := t.Digits
	if digits == 0 {
		digits = 2
	}
	num := func(v float64) string {
		if math.IsNaN(v) {
			return "–"
		}
		return strconv.FormatFloat(v, 'f', digits, 64)
	}
	fmt.Fprintf(b, "| %s |", r.Label)
	for _, c := range cells {
		ours := num(c.mean)
		if !math.IsNaN(c.mean) && c.n > 1 {
			ours += " ± " + num(c.sd)
		}
		if t.NoPaper {
			fmt.Fprintf(b, " %s |", ours)
		} else {
			fmt.Fprintf(b, " %s | %s |", ours, num(c.paper))
		}
	}
	for k := range t.ExtraColumns {
		v := ""
		if k < len(r.Extra) {
			v = r.Extra[k]
		}
		fmt.Fprintf(b, " %s |", v)
	}
	b.WriteString("\n")
}

// writeNotes says over how many repetitions the numbers are, and which
// were left out.
func (d *tableData) writeNotes(b *strings.Builder, t ReportTable) {
	if len(d.reps) > 0 {
		lo, hi := d.reps[0], d.reps[0]
		for _, n := range d.reps {
			lo, hi = min(lo, n), max(hi, n)
		}
		nrep := strconv.Itoa(lo)
		if hi != lo {
			nrep = fmt.Sprintf("%d to %d", lo, hi)
		}
		fmt.Fprintf(b, "\nOurs: mean ± sample standard deviation over %s repetitions (`%s`).\n", nrep, t.Metric)
	}
	if len(d.excluded) > 0 {
		fmt.Fprintf(b, "Left out because a subflow's window blew up (a congestion-control bug, `anomaly` in the results): %s.\n", strings.Join(d.excluded, "; "))
	}
}

// chart is the table as a bar chart: one category per row, one series per
// column, the paper's numbers as reference marks.
func (d *tableData) chart(t ReportTable) []byte {
	bc := BarChart{Title: t.ChartTitle, YLabel: t.Unit}
	if bc.Title == "" {
		bc.Title = t.Caption
	}
	for _, r := range d.rows {
		bc.Categories = append(bc.Categories, r.Label)
	}
	for ci, c := range t.Columns {
		bs := BarSeries{Name: columnLabel(c)}
		for i := range d.rows {
			bs.Values = append(bs.Values, d.cells[i][ci].mean)
			bs.Err = append(bs.Err, d.cells[i][ci].sd)
			bs.Ref = append(bs.Ref, d.cells[i][ci].paper)
		}
		bc.Series = append(bc.Series, bs)
	}
	return bc.SVG()
}
