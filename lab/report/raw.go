// SPDX-License-Identifier: Apache-2.0

// Reading a run's raw results back, to summarise them again or to chart
// one repetition.

package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
)

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
			s.SRTTMs, _ = strconv.ParseFloat(row[10], 64)
			s.MinRTTMs, _ = strconv.ParseFloat(row[11], 64)
			s.BytesAcked, _ = strconv.ParseUint(row[12], 10, 64)
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
