// SPDX-License-Identifier: Apache-2.0

// Package runner runs experiments on emulated multipath networks with real
// kernel MPTCP (it needs root): for a scenario file (lab/scenario) Run
// builds the network (lab/topo), loads the congestion controls the flows
// need (pkg/cc), runs the flows with the project's own transfer tool
// (lab/xfer) or iperf3, samples every subflow (tcp_info through sock_diag,
// and mptcp-cc's map through pkg/stats), tears everything down, and writes
// the results (lab/report).
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/report"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// Options say how to run a scenario file.
type Options struct {
	Out     string   // results go to Out/<scenario name>
	Reps    int      // > 0 overrides the file's repetitions
	Cases   []string // run only these cases (case ids or variant names); empty: all
	ID      RunID    // names everything the run creates (NewRunID)
	Log     io.Writer
	Command string // the command line that started the run, for the record
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

func (o Options) selected(c scenario.Case) bool {
	if len(o.Cases) == 0 {
		return true
	}
	for _, s := range o.Cases {
		if s == c.ID || s == c.Variant {
			return true
		}
	}
	return false
}

// Run runs every selected case of the file, each for the given number of
// repetitions, on a freshly built network per repetition. It always tears
// down what it built and unloads what it loaded, also when ctx is
// cancelled; results of the repetitions that ran are written either way.
func Run(ctx context.Context, f *scenario.File, o Options) (sum *report.Summary, err error) {
	if o.ID == "" {
		return nil, errors.New("runner.Run needs a run id (runner.NewRunID)")
	}
	cases, err := o.cases(f)
	if err != nil {
		return nil, err
	}
	ccs, err := LoadCCs(o.ID, f.Algorithms())
	if err != nil {
		return nil, err
	}
	defer func() {
		if uerr := ccs.Unload(); uerr != nil {
			err = errors.Join(err, fmt.Errorf("unloading: %w", uerr))
		}
	}()
	for _, l := range ccs.Loaded() {
		o.logf("loaded %s as %s", l.Spec, l.Name)
	}
	dir := filepath.Join(o.Out, f.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), f.Source, 0o644); err != nil {
		return nil, err
	}
	sum = newSummary(f, o, ccs, cases)
	failures := runCases(ctx, cases, ccs, o, dir, sum)
	sum.Seconds = time.Since(sum.Started).Seconds()
	if len(o.Cases) > 0 {
		report.MergeSummary(filepath.Join(dir, "summary.json"), f, sum)
	}
	if werr := report.WriteSummary(dir, sum); werr != nil {
		err = errors.Join(err, werr)
	}
	if ctx.Err() != nil {
		return sum, errors.Join(err, fmt.Errorf("interrupted: %w", ctx.Err()))
	}
	if len(failures) > 0 {
		return sum, errors.Join(err, fmt.Errorf("%d repetition(s) failed:\n  %s", len(failures), strings.Join(failures, "\n  ")))
	}
	return sum, err
}

// cases are the selected cases of f, after checking that the machine can
// run them (kernel congestion controls, iperf3).
func (o Options) cases(f *scenario.File) ([]scenario.Case, error) {
	var cases []scenario.Case
	for _, c := range f.Cases {
		if o.selected(c) {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("no case of %s matches %v (cases: %s)", f.Path, o.Cases, strings.Join(caseIDs(f), ", "))
	}
	if err := checkKernelCCs(f); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("iperf3"); err != nil && usesIperf(cases) {
		return nil, errors.New("a flow uses iperf3, which is not installed (make deps)")
	}
	return cases, nil
}

// newSummary is the summary of a run before any case ran.
func newSummary(f *scenario.File, o Options, ccs *CCSet, cases []scenario.Case) *report.Summary {
	loaded, _ := json.Marshal(ccs.Loaded())
	sum := &report.Summary{Scenario: f.Name, File: f.Path, Run: string(o.ID), Command: o.Command, Started: time.Now(),
		Kernel: kernel.Release(), Commit: gitCommit(), SweepName: f.SweepName, SweepValues: f.SweepVals,
		CCs: loaded, Reference: f.References}
	variantSeen := map[string]bool{}
	for _, c := range cases {
		if !variantSeen[c.Variant] {
			variantSeen[c.Variant] = true
			sum.Variants = append(sum.Variants, c.Variant)
		}
	}
	return sum
}

// runCases runs the repetitions of every case, writing each repetition's
// results and adding each case to sum. It returns the failures, one line
// each, and stops early when ctx ends.
func runCases(ctx context.Context, cases []scenario.Case, ccs *CCSet, o Options, dir string, sum *report.Summary) (failures []string) {
	for ci, c := range cases {
		reps := c.Scenario.Repetitions
		if o.Reps > 0 {
			reps = o.Reps
		}
		sum.Repetitions = reps
		var results []*report.RepResult
		for rep := 0; rep < reps && ctx.Err() == nil; rep++ {
			rdir := filepath.Join(dir, c.ID, "rep"+strconv.Itoa(rep))
			r := runRep(ctx, c, rep, ccs, o, rdir)
			if err := report.WriteRep(r, c.Scenario.Record, c.Scenario.Record.Sample); err != nil {
				r.Error = strings.TrimSpace(r.Error + "; writing results: " + err.Error())
			}
			r.Dir, _ = filepath.Rel(dir, rdir)
			results = append(results, r)
			o.logf("[%d/%d %s rep %d/%d] %s", ci+1, len(cases), c.ID, rep+1, reps, report.Brief(r))
			if r.Error != "" {
				sum.Failed++
				failures = append(failures, fmt.Sprintf("%s rep %d: %s", c.ID, rep, r.Error))
			}
		}
		if len(results) > 0 {
			sum.Cases = append(sum.Cases, report.SummarizeCase(c, results))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return failures
}

func caseIDs(f *scenario.File) []string {
	var out []string
	for _, c := range f.Cases {
		out = append(out, c.ID)
	}
	return out
}

func usesIperf(cases []scenario.Case) bool {
	for _, c := range cases {
		for _, f := range c.Scenario.Flows {
			if f.Tool == "iperf3" {
				return true
			}
		}
	}
	return false
}

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "-dirty"
	}
	return c
}
