// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/lab/report"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// newRun gives a test a run id and checks at cleanup that the run left
// nothing on the system.
func newRun(t *testing.T) RunID {
	t.Helper()
	testenv.RequireRoot(t)
	id, err := NewRunID()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		assertNothingLeft(t, id)
		id.Release()
	})
	return id
}

func assertNothingLeft(t *testing.T, id RunID) {
	t.Helper()
	if ns, _ := topo.ListPrefix(id.NSPrefix()); len(ns) > 0 {
		t.Errorf("namespaces left: %v", ns)
		_, _ = CleanRun(id)
	}
	if _, err := os.Stat(id.PinRoot()); err == nil {
		t.Errorf("pins left under %s", id.PinRoot())
		_, _ = CleanRun(id)
	}
	names, _ := cc.Registered()
	for _, n := range names {
		if strings.HasPrefix(n, ccIDPrefix+string(id)+"_") {
			t.Errorf("congestion control %s still registered", n)
		}
	}
}

// The smoke scenario end to end, in process: every flow runs and arrives
// intact, the CSV, JSON and SVG files are written, the time series have
// both subflows of the MPTCP flows with the kernel's and the map's view,
// and nothing is left afterwards.
func TestRunSmoke(t *testing.T) {
	id := newRun(t)
	f, err := scenario.Load("../../testdata/scenarios/smoke.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	start := time.Now()
	sum, err := Run(context.Background(), f, Options{Out: out, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("smoke run took %v", time.Since(start).Round(time.Millisecond))
	dir := filepath.Join(out, "smoke")
	for _, p := range []string{"summary.json", "summary.csv", "throughput.svg", "completion.svg", "retrans.svg", "scenario.yaml",
		"base/rep0/flows.csv", "base/rep0/result.json", "base/rep0/subflows.csv", "base/rep0/throughput.csv", "base/rep0/goodput.csv",
		"base/rep0/links.csv", "base/rep0/commands.txt", "base/rep0/throughput.svg", "base/rep0/cwnd.svg", "base/rep0/cwnd_sum.svg"} {
		if st, err := os.Stat(filepath.Join(dir, p)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v (empty or missing)", p, err)
		}
	}
	c := sum.Case("base")
	if c == nil || len(c.Groups) != 4 {
		t.Fatalf("summary: %+v", sum)
	}
	for _, g := range c.Groups {
		if g.Errors > 0 || g.Metrics["throughput_mbps_mean"].Mean <= 0 {
			t.Errorf("flow %s: %d failed, throughput %v", g.Flow, g.Errors, g.Metrics["throughput_mbps_mean"].Mean)
		}
	}
	if g := c.Group("sized"); g.Metrics["completion_s_mean"].Mean <= 0 || g.Metrics["completion_s_mean"].Mean > 5 {
		t.Errorf("sized flow completion %v s", g.Metrics["completion_s_mean"].Mean)
	}

	rows := readCSV(t, filepath.Join(dir, "base/rep0/flows.csv"))
	col := index(rows[0])
	for _, r := range rows[1:] {
		if r[col["intact"]] != "true" || r[col["error"]] != "" {
			t.Errorf("flow %s: intact %s, error %q", r[col["name"]], r[col["intact"]], r[col["error"]])
		}
		want := map[string]string{"mp": "l" + string(id) + "_olia", "tcp": "reno", "sized": "l" + string(id) + "_lial", "iperf": "l" + string(id) + "_balia"}[r[col["name"]]]
		if r[col["cc_actual"]] != want {
			t.Errorf("flow %s ran %q, want %q", r[col["name"]], r[col["cc_actual"]], want)
		}
		if !strings.Contains(r[col["command"]], "iperf3") && !strings.Contains(r[col["command"]], "mptcp-xfer client") {
			t.Errorf("flow %s: command %q", r[col["name"]], r[col["command"]])
		}
	}
	if cmd := rows[4][col["command"]]; !strings.Contains(cmd, "mptcpize run iperf3 -c 10.4.0.2") {
		t.Errorf("the iperf3 flow's command line: %q", cmd)
	}

	// Subflow samples: MPTCP flows on both paths, seen by the kernel and
	// the map ("both"); the TCP flow by the kernel only.
	rows = readCSV(t, filepath.Join(dir, "base/rep0/subflows.csv"))
	col = index(rows[0])
	paths := map[string]map[string]bool{}
	sources := map[string]map[string]bool{}
	for _, r := range rows[1:] {
		fl := r[col["flow"]]
		if paths[fl] == nil {
			paths[fl], sources[fl] = map[string]bool{}, map[string]bool{}
		}
		paths[fl][r[col["path"]]] = true
		sources[fl][r[col["source"]]] = true
		if r[col["cwnd"]] == "0" {
			t.Errorf("a sample with cwnd 0: %v", r)
		}
	}
	for _, fl := range []string{"mp", "iperf", "sized"} {
		if !paths[fl]["wifi"] || !paths[fl]["lte"] || !sources[fl]["both"] {
			t.Errorf("flow %s: paths %v sources %v, want both paths, kernel and map", fl, paths[fl], sources[fl])
		}
	}
	if len(paths["tcp"]) != 1 || !paths["tcp"]["wifi"] || sources["tcp"]["both"] {
		t.Errorf("tcp flow: paths %v sources %v", paths["tcp"], sources["tcp"])
	}

	// `mptcp-lab summarize` rebuilds the summary from the raw files alone:
	// the same metrics as the run's own.
	again, err := report.Summarize(dir)
	if err != nil {
		t.Fatal(err)
	}
	ac := again.Case("base")
	if ac == nil || len(ac.Groups) != len(c.Groups) {
		t.Fatalf("rebuilt summary: %+v", again)
	}
	for _, g := range c.Groups {
		ag := ac.Group(g.Flow)
		if ag == nil {
			t.Fatalf("rebuilt summary has no flow %s", g.Flow)
		}
		for _, m := range []string{"throughput_mbps_mean", "completion_s_mean", "retrans_after_warmup_mean"} {
			if got, want := ag.Metrics[m].Mean, g.Metrics[m].Mean; math.Abs(got-want) > 1e-9*math.Max(1, want) {
				t.Errorf("flow %s %s: rebuilt %v, run %v", g.Flow, m, got, want)
			}
		}
	}
}

// A run cancelled midway stops within seconds and leaves nothing.
func TestRunCancelled(t *testing.T) {
	id := newRun(t)
	f, err := scenario.Parse("long.yaml", []byte(`
name: long
links: {a: {rate: 10Mbit, delay: 10ms}, b: {rate: 10Mbit}}
servers: {s: {}}
hosts: {h: {paths: [a, b]}}
flows:
  f: {cc: lia, duration: 60s}
  g: {cc: olia, bytes: 1GB}
`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(2*time.Second, cancel)
	start := time.Now()
	sum, err := Run(ctx, f, Options{Out: t.TempDir(), ID: id})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("error %v, want interrupted", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v to stop", d)
	}
	if sum == nil || len(sum.Cases) != 1 || sum.Failed != 1 {
		t.Errorf("summary of the interrupted run: %+v", sum)
	}
}

func readCSV(t *testing.T, p string) [][]string {
	t.Helper()
	fh, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s: %v (%d rows)", p, err, len(rows))
	}
	return rows
}

func index(header []string) map[string]int {
	m := map[string]int{}
	for i, h := range header {
		m[h] = i
	}
	return m
}

// hosts.NAME.mptcp.join_after: the connection runs on one subflow until
// the endpoints are added, then the second subflow joins it.
func TestRunLateJoin(t *testing.T) {
	id := newRun(t)
	f, err := scenario.Parse("late.yaml", []byte(`
name: late
links:
  a: {rate: 20Mbit, delay: 5ms, queue: 1bdp}
  b: {rate: 20Mbit, delay: 5ms, queue: 1bdp}
servers:
  s: {}
hosts:
  h: {paths: [a, b], mptcp: {join_after: 1500ms}}
flows:
  mp: {from: h, cc: lia+lisa, duration: 3s}
record: {sample: 50ms, warmup: 500ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := Run(context.Background(), f, Options{Out: out, ID: id}); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(out, "late/base/rep0/subflows.csv"))
	col := index(rows[0])
	first := map[string]float64{}
	for _, r := range rows[1:] {
		p := r[col["path"]]
		tm, err := strconv.ParseFloat(r[col["t"]], 64)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := first[p]; !ok {
			first[p] = tm
		}
	}
	t.Logf("first sample per path (s): %v", first)
	if first["a"] > 0.5 {
		t.Errorf("path a first seen at %.2f s, want from the start", first["a"])
	}
	if tb, ok := first["b"]; !ok || tb < 1.5 || tb > 2.5 {
		t.Errorf("path b first seen at %v s (seen: %v), want shortly after the join at 1.5 s", tb, ok)
	}
	cmds, err := os.ReadFile(filepath.Join(out, "late/base/rep0/commands.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cmds), "join h (at 1.5s): ip -n ") || !strings.Contains(string(cmds), "mptcp endpoint add 10.10.1.1 dev p1 subflow") {
		t.Errorf("commands.txt does not record the join:\n%s", cmds)
	}
}

// path_manager: mptcpd: the runner starts mptcpd in the hosts' namespaces
// instead of adding endpoints itself (for l, 1 s into the flows), records
// it in commands.txt, keeps its log, and stops it at the end; both MPTCP
// flows use both paths.
func TestRunMptcpd(t *testing.T) {
	id := newRun(t)
	f, err := scenario.Parse("mptcpd.yaml", []byte(`
name: mptcpd
links: {a: {rate: 20Mbit}, b: {rate: 10Mbit}}
servers: {s: {}}
hosts:
  h: {paths: [a, b], mptcp: {path_manager: mptcpd}}
  l: {paths: [a, b], mptcp: {path_manager: mptcpd, join_after: 1s}}
flows:
  f: {from: h, cc: olia, duration: 3s}
  g: {from: l, cc: olia, duration: 3s}
record: {sample: 50ms, plots: false}
`))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	sum, err := Run(context.Background(), f, Options{Out: out, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(out, "mptcpd", "base", "rep0")
	c := sum.Case("base")
	if c == nil || c.Group("f") == nil || c.Group("g") == nil || c.Group("f").Errors+c.Group("g").Errors > 0 {
		t.Fatalf("summary: %+v", sum)
	}
	cmds, err := os.ReadFile(filepath.Join(rep, "commands.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"path manager of h (before the flows): ip netns exec ", "join l (at 1s): ip netns exec ", "--load-plugins=addr_adv --path-manager=addr_adv --addr-flags=subflow", "kill -TERM"} {
		if !strings.Contains(string(cmds), want) {
			t.Errorf("commands.txt lacks %q:\n%s", want, cmds)
		}
	}
	if strings.Contains(string(cmds), "mptcp endpoint add") {
		t.Errorf("the runner added endpoints itself:\n%s", cmds)
	}
	logs, _ := filepath.Glob(filepath.Join(rep, "mptcpd-*.log"))
	if len(logs) != 2 {
		t.Errorf("mptcpd logs in %s: %v, want two", rep, logs)
	}
	for _, l := range logs {
		if b, _ := os.ReadFile(l); !strings.Contains(string(b), "path manager initialized") {
			t.Errorf("mptcpd's log %s: %s", l, b)
		}
	}

	// Both paths carried the flow: subflow samples on each, and each
	// link sent at least a fifth of what its rate allows in 3 s.
	rows := readCSV(t, filepath.Join(rep, "subflows.csv"))
	col := index(rows[0])
	paths := map[string]map[string]bool{"f": {}, "g": {}}
	for _, r := range rows[1:] {
		if p := paths[r[col["flow"]]]; p != nil {
			p[r[col["path"]]] = true
		}
	}
	for fl, p := range paths {
		if !p["a"] || !p["b"] {
			t.Errorf("flow %s: subflow samples on paths %v, want a and b", fl, p)
		}
	}
	rows = readCSV(t, filepath.Join(rep, "links.csv"))
	col = index(rows[0])
	rate := map[string]float64{"a": 20e6, "b": 10e6}
	for _, r := range rows[1:] {
		name := r[col["link"]]
		if _, ok := rate[name]; !ok {
			continue
		}
		sent, _ := strconv.ParseFloat(r[col["sent_bytes"]], 64)
		t.Logf("link %s: %.1f MB", name, sent/1e6)
		if sent < rate[name]/8*3/5 {
			t.Errorf("link %s sent %.0f bytes: the path carried (almost) nothing", name, sent)
		}
		delete(rate, name)
	}
	if len(rate) > 0 {
		t.Errorf("links.csv has no row for %v", rate)
	}
}
