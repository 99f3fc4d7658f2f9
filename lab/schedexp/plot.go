// SPDX-License-Identifier: Apache-2.0

package schedexp

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/report"
)

// Charts returns the DAPS figures by file name: the mean and the 95th
// percentile of the blocking time per case and scheduler, with the seed's
// worst-case model as each case's reference marker.
func (r DAPSResult) Charts() map[string][]byte {
	var cats []string
	var scheds []string
	for _, c := range r.Cases {
		cats = append(cats, fmt.Sprintf("case %d (A = %.3g)", c.Case, c.A))
		for _, cell := range c.Schedulers {
			if !slices.Contains(scheds, cell.Scheduler) {
				scheds = append(scheds, cell.Scheduler)
			}
		}
	}
	chart := func(title string, stat func(Cell) float64) []byte {
		bc := report.BarChart{Title: title, YLabel: "blocking time (ms)", Categories: cats, RefName: "seed model T_maxblock"}
		for _, s := range scheds {
			bs := report.BarSeries{Name: s}
			for _, c := range r.Cases {
				v := math.NaN()
				for _, cell := range c.Schedulers {
					if cell.Scheduler == s {
						v = stat(cell)
					}
				}
				bs.Values = append(bs.Values, v)
				bs.Ref = append(bs.Ref, c.ModelMs)
			}
			bc.Series = append(bc.Series, bs)
		}
		return bc.SVG()
	}
	base, how := "daps-bulk", "bulk sender"
	if r.Pace > 0 {
		base, how = fmt.Sprintf("daps-paced%.0f", 100*r.Pace), fmt.Sprintf("paced at %.0f%%", 100*r.Pace)
	}
	return map[string][]byte{
		base + "-blocking-mean.svg": chart("DAPS cases, "+how+": receive-buffer blocking time, mean", func(c Cell) float64 { return c.Blocking.Mean }),
		base + "-blocking-p95.svg":  chart("DAPS cases, "+how+": receive-buffer blocking time, 95th percentile", func(c Cell) float64 { return c.Blocking.P95 }),
	}
}

// Charts returns the PAPD figure: Uc = T_mp / T_best per network and
// scheduler, with the seed's Uc (its minRTT for minrtt and default, its
// PAPD for papd) as reference markers where its table has the row.
func (r PAPDResult) Charts() map[string][]byte {
	var cats, scheds []string
	for _, c := range r.Configs {
		cats = append(cats, fmt.Sprintf("RTT2 %g ms, p2 %g%%", c.RTT2Ms, 100*c.Loss2))
		for _, s := range c.Schedulers {
			if !slices.Contains(scheds, s.Scheduler) {
				scheds = append(scheds, s.Scheduler)
			}
		}
	}
	bc := report.BarChart{Title: "PAPD: aggregation efficiency Uc = T_mp / T_best", YLabel: "Uc (%)", Categories: cats, RefName: "seed (minRTT; PAPD)"}
	for _, s := range scheds {
		bs := report.BarSeries{Name: s}
		for _, c := range r.Configs {
			v := math.NaN()
			for _, x := range c.Schedulers {
				if x.Scheduler == s {
					v = 100 * x.Uc
				}
			}
			ref := math.NaN()
			if m, p, ok := SeedUc(time.Duration(c.RTT2Ms*float64(time.Millisecond)), c.Loss2); ok {
				ref = 100 * m
				if s == "papd" {
					ref = 100 * p
				}
			}
			bs.Values = append(bs.Values, v)
			bs.Ref = append(bs.Ref, ref)
		}
		bc.Series = append(bc.Series, bs)
	}
	return map[string][]byte{"papd-uc.svg": bc.SVG()}
}

// Render rewrites the tables and figures of the results found in dir from
// their JSON, so a change of presentation needs no new runs: for each
// daps*.json, papd*.json and cost*.json, NAME.md beside it and the
// result's figures. It returns the files it wrote.
func Render(dir string) ([]string, error) {
	var wrote []string
	kinds := []struct {
		prefix string
		new    func() interface{ Markdown() string }
	}{
		{"daps", func() interface{ Markdown() string } { return &DAPSResult{} }},
		{"papd", func() interface{ Markdown() string } { return &PAPDResult{} }},
		{"cost", func() interface{ Markdown() string } { return &CostResult{} }},
	}
	for _, k := range kinds {
		paths, err := filepath.Glob(filepath.Join(dir, k.prefix+"*.json"))
		if err != nil {
			return wrote, err
		}
		for _, path := range paths {
			b, err := os.ReadFile(path)
			if err != nil {
				return wrote, err
			}
			v := k.new()
			if err := json.Unmarshal(b, v); err != nil {
				return wrote, fmt.Errorf("%s: %w", path, err)
			}
			name := strings.TrimSuffix(filepath.Base(path), ".json")
			files := map[string][]byte{name + ".md": []byte(v.Markdown())}
			if c, ok := v.(interface{ Charts() map[string][]byte }); ok {
				for f, svg := range c.Charts() {
					files[f] = svg
				}
			}
			for f, data := range files {
				if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
					return wrote, err
				}
				wrote = append(wrote, f)
			}
		}
	}
	slices.Sort(wrote)
	return wrote, nil
}
