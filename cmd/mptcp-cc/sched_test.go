// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/events"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// twoScheduled is one connection of two subflows running mptcp_olia, the
// first scheduled by s_min, and a plain TCP socket.
func twoScheduled() []stats.Subflow {
	ap := netip.MustParseAddrPort
	return []stats.Subflow{
		{CC: "mptcp_olia", Algo: "olia", ID: 1, Token: 0xabc, SubflowID: 1, MPTCP: true, Local: ap("10.0.0.1:4000"), Remote: ap("10.1.0.1:80"),
			Cwnd: 10, CAState: "open", CoupledName: "alpha", Sched: &stats.SchedCounters{Name: "s_min", Algo: "minrtt", Sends: 1234, Retrans: 5, BurstBytes: 20 << 20}},
		{CC: "mptcp_olia", Algo: "olia", ID: 2, Token: 0xabc, SubflowID: 2, MPTCP: true, Local: ap("10.0.1.1:4001"), Remote: ap("10.1.0.1:80"),
			Cwnd: 20, CAState: "open", CoupledName: "alpha"},
		{CC: "mptcp_olia", Algo: "olia", ID: 3, Local: ap("10.0.0.1:4002"), Remote: ap("10.1.0.1:81"), Cwnd: 7, CAState: "loss", CoupledName: "alpha"},
	}
}

// `subflows` grows the scheduler's columns only when one of ours
// schedules a listed subflow, marks the others "-", and counts the
// records it cannot list.
func TestSubflowsSchedColumns(t *testing.T) {
	var b bytes.Buffer
	subs := twoScheduled()
	if err := printSubflows(&b, subs, 2); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	t.Logf("\n%s", b.String())
	if len(lines) != 5 {
		t.Fatalf("%d lines, want a header, 3 subflows and the note", len(lines))
	}
	head := strings.Fields(lines[0])
	if !slices.Equal(head[len(head)-4:], []string{"SCHED", "SENDS", "REINJECTS", "BURST"}) {
		t.Errorf("header %q", lines[0])
	}
	if f := strings.Fields(lines[1]); !slices.Equal(f[len(f)-4:], []string{"s_min", "1234", "5", "20.0MiB"}) || f[0] != "00000abc" {
		t.Errorf("scheduled subflow: %q", lines[1])
	}
	for _, l := range lines[2:4] {
		if !strings.HasSuffix(strings.TrimSpace(l), "-") {
			t.Errorf("unscheduled subflow without its '-': %q", l)
		}
	}
	if !strings.Contains(lines[4], "2 more subflow record(s)") || !strings.Contains(lines[4], "mptcp-cc sched list") {
		t.Errorf("note %q", lines[4])
	}

	// Nothing of ours schedules (this machine): the table is as it was.
	b.Reset()
	for i := range subs {
		subs[i].Sched = nil
	}
	if err := printSubflows(&b, subs, 0); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "SCHED") || strings.Contains(b.String(), "record") || strings.Count(b.String(), "\n") != 4 {
		t.Errorf("without a scheduler:\n%s", b.String())
	}

	// JSON: the counters under "scheduler", absent where none schedules.
	js, err := json.Marshal(twoScheduled())
	if err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	sc, _ := back[0]["scheduler"].(map[string]any)
	if sc["name"] != "s_min" || sc["algo"] != "minrtt" || sc["sends"] != 1234.0 || sc["retrans"] != 5.0 || sc["burst_bytes"] != float64(20<<20) {
		t.Errorf("JSON scheduler of subflow 1: %v", back[0]["scheduler"])
	}
	if _, ok := back[1]["scheduler"]; ok {
		t.Errorf("JSON of an unscheduled subflow has a scheduler: %v", back[1])
	}
}

// `top` shows the connection's scheduler with its picks (sends and
// reinjections) summed, and each subflow's.
func TestTopSchedColumns(t *testing.T) {
	var s events.Sampler
	f := s.Frame(twoScheduled(), nil, time.Unix(1e9, 0))
	var b bytes.Buffer
	renderTop(&b, f, "token", time.Second, nil, 0, false)
	t.Logf("\n%s", b.String())
	var conn, sf1, sf2 string
	for _, l := range strings.Split(b.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "00000abc"):
			conn = l
		case strings.Contains(l, "sf 1") && strings.Contains(l, "10.0.0.1:4000"):
			sf1 = l
		case strings.Contains(l, "sf 2"):
			sf2 = l
		}
	}
	if !strings.Contains(b.String(), "SCHED  PICKS  BURST") {
		t.Errorf("no scheduler header")
	}
	if !strings.HasSuffix(conn, "s_min  1239   20.0MiB") {
		t.Errorf("connection row %q: want s_min, 1239 picks, 20.0MiB", conn)
	}
	if !strings.HasSuffix(sf1, "1239   20.0MiB") || !strings.HasSuffix(sf2, "-") {
		t.Errorf("subflow rows %q, %q", sf1, sf2)
	}

	subs := twoScheduled()
	subs[0].Sched = nil
	b.Reset()
	renderTop(&b, s.Frame(subs, nil, time.Unix(1e9+1, 0)), "token", time.Second, nil, 0, false)
	if strings.Contains(b.String(), "SCHED") {
		t.Errorf("scheduler columns without a scheduler:\n%s", b.String())
	}
}

func TestSchedArgsFlag(t *testing.T) {
	var a schedArgs
	for _, s := range []string{"0=2", "5=4294967295", "3=0"} {
		if err := a.Set(s); err != nil {
			t.Fatalf("Set(%q): %v", s, err)
		}
	}
	if a.v != [6]uint32{2, 0, 0, 0, 0, 4294967295} || a.String() != "0=2,3=0,5=4294967295" {
		t.Errorf("args %v %q", a.v, a.String())
	}
	for s, want := range map[string]string{
		"6=1":          "INDEX 0 to 5",
		"x=1":          "INDEX=VALUE",
		"2":            "INDEX=VALUE",
		"-1=3":         "INDEX 0 to 5",
		"1=4294967296": `"4294967296" is not a number from 0 to 4294967295`,
		"1=-1":         "is not a number",
		"0=7":          "tunable 0 is given twice",
	} {
		if err := a.Set(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Set(%q) = %v, want an error saying %q", s, err, want)
		}
	}
}

// `sched list` names this build's schedulers, the loaded ones with their
// parameters, counters and state, what the kernel offers and each
// namespace's scheduler.
func TestSchedListText(t *testing.T) {
	this, other := structops.ThisBuild(), structops.Build{Version: "v0.0.9", Generation: 2}
	l := schedList{
		Algorithms: []schedAlgo{{Algo: "minrtt", Summary: "lowest RTT", LoadedAs: []string{"m1", "m2"}}, {Algo: "rr", Summary: "round robin", LoadedAs: []string{}}},
		Loaded: []schedLoaded{
			{Name: "m1", Algo: "minrtt", Registered: true, Subflows: 3, Sends: 100, Retrans: 2, BurstBytes: 5000, Build: &this, Current: true},
			{Name: "m2", Algo: "minrtt", Trace: true, Args: [6]uint32{0, 7}, Registered: false, Build: &other},
			{Name: "m3", Algo: "rr", Registered: true},
		},
		Available: []string{"default", "m1"},
		Netns:     []schedNetns{{Netns: "", Scheduler: "default"}, {Netns: "lab-c", Scheduler: "m1"}, {Netns: "odd", Error: "MPTCP is disabled"}},
		Hook:      true,
	}
	var b bytes.Buffer
	if err := printSchedList(&b, l); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	t.Logf("\n%s", text)
	for _, want := range []string{
		"minrtt     m1, m2     lowest RTT", "rr         -          round robin",
		"m2      minrtt     arg1=7 trace", "NOT REGISTERED (stale pins: mptcp-cc sched unload --name m2)",
		"v0.0.9 (upgraded 2 times): not this binary's build, mptcp-cc sched upgrade m2",
		"unrecorded (mptcp-cc 0.1.0 or earlier): mptcp-cc sched upgrade m3",
		"the kernel offers: default m1",
		"(own)  default", "lab-c  m1", "odd    ? (MPTCP is disabled)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("sched list lacks %q", want)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "m1 ") && !slices.Equal(strings.Fields(line), []string{"m1", "minrtt", "defaults", "registered", "3", "100", "2", "5000", this.Version}) {
			t.Errorf("m1: %q", line)
		}
	}
	l.Loaded = nil
	b.Reset()
	_ = printSchedList(&b, l)
	if !strings.Contains(b.String(), "none loaded; try `mptcp-cc sched load --algo "+sched.Names()[0]+"`") {
		t.Errorf("nothing loaded:\n%s", b.String())
	}

	// Without the hook: why nothing can be loaded, and no suggestion to.
	l.Hook, l.NoHook = false, sched.ErrNoHook.Error()
	b.Reset()
	_ = printSchedList(&b, l)
	if !strings.Contains(b.String(), "schedulers cannot be loaded here: "+sched.ErrNoHook.Error()) || strings.Contains(b.String(), "sched load") {
		t.Errorf("nothing loadable:\n%s", b.String())
	}
}

// The schedulers say what they are wherever they are offered: the
// top-level help, `sched -h` and `sched load -h` call them experimental and
// name the hook they need and the tree that has it.
func TestSchedHelpSaysExperimental(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"sched", "-h"}, {"sched", "load", "-h"}} {
		var out, stderr bytes.Buffer
		if code := app.Run(args, &out, &stderr); code != 0 {
			t.Fatalf("mptcp-cc %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
		text := strings.ToLower(strings.Join(strings.Fields(out.String()), " "))
		if want := "experimental: needs a kernel with the bpf mptcp scheduler hook (mptcp_net-next's export branch)"; !strings.Contains(text, want) {
			t.Errorf("mptcp-cc %s does not say %q:\n%s", strings.Join(args, " "), want, out.String())
		}
	}
}

// On this machine (no scheduler hook): `sched list --json` lists every
// scheduler of the build, loaded nowhere, and the caller's and a new
// namespace's scheduler; `sched use` sets a registered one (the kernel's
// own is the only one here); `subflows --json` has no scheduler anywhere.
func TestSchedHost(t *testing.T) {
	testenv.RequireRoot(t)
	if sched.IsRegistered("default") == false {
		t.Skip("no MPTCP schedulers in this kernel")
	}
	bin := testenv.Binary(t, ".")
	root := testkernel.PinRoot(t)
	schedRoot := filepath.Join(filepath.Dir(root), "sched")
	ns := testenv.Namespace(t, "mptcp-cc-sched")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("mptcp-cc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	var l struct {
		Algorithms []struct {
			Algo     string   `json:"algo"`
			LoadedAs []string `json:"loaded_as"`
		}
		Loaded    []any
		Available []string
		Netns     []struct{ Netns, Scheduler, Error string }
		Hook      bool   `json:"hook"`
		NoHook    string `json:"no_hook"`
	}
	if err := json.Unmarshal([]byte(run("sched", "list", "--json", "--bpffs", schedRoot)), &l); err != nil {
		t.Fatal(err)
	}
	var algos []string
	for _, a := range l.Algorithms {
		algos = append(algos, a.Algo)
		if len(a.LoadedAs) != 0 {
			t.Errorf("%s loaded as %v under an empty root", a.Algo, a.LoadedAs)
		}
	}
	if !slices.Equal(algos, sched.Names()) || len(l.Loaded) != 0 || !slices.Contains(l.Available, "default") {
		t.Errorf("sched list: %+v", l)
	}
	// Without the scheduler hook (every released kernel, this host's
	// included) list says why nothing can be loaded and suggests no load
	// that would fail; with it, it suggests one.
	text := run("sched", "list", "--bpffs", schedRoot)
	if hookErr := sched.CheckHook(); hookErr != nil {
		if l.Hook || l.NoHook != hookErr.Error() {
			t.Errorf("sched list --json: hook %v, no_hook %q; want false and %q", l.Hook, l.NoHook, hookErr)
		}
		if !strings.Contains(text, "schedulers cannot be loaded here: "+hookErr.Error()) || strings.Contains(text, "sched load") {
			t.Errorf("sched list without the hook:\n%s", text)
		}
	} else if !l.Hook || l.NoHook != "" || !strings.Contains(text, "none loaded; try `mptcp-cc sched load") {
		t.Errorf("sched list with the hook: hook %v, no_hook %q\n%s", l.Hook, l.NoHook, text)
	}
	if _, err := os.Stat(schedRoot); !os.IsNotExist(err) {
		t.Errorf("sched list made %s: %v", schedRoot, err)
	}
	own, _ := sched.Current("")
	found := 0
	for _, n := range l.Netns {
		if n.Netns == "" && n.Scheduler == own || n.Netns == ns && n.Scheduler == "default" {
			found++
		}
	}
	if found != 2 {
		t.Errorf("namespaces %+v: want the own (%s) and %s (default)", l.Netns, own, ns)
	}

	var used struct{ Netns, Scheduler, Previous string }
	if err := json.Unmarshal([]byte(run("sched", "use", "default", "--netns", ns, "--json")), &used); err != nil {
		t.Fatal(err)
	}
	if used.Netns != ns || used.Scheduler != "default" || used.Previous != "default" {
		t.Errorf("sched use: %+v", used)
	}
	if cur, err := sched.Current(ns); err != nil || cur != "default" {
		t.Errorf("after sched use: %q, %v", cur, err)
	}

	out := run("subflows", "--json", "--bpffs", root, "--sched-bpffs", schedRoot)
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("subflows --json with nothing loaded: %q", out)
	}
	out = run("subflows", "--bpffs", root, "--sched-bpffs", schedRoot)
	if strings.Contains(out, "SCHED") || strings.Contains(out, "record") {
		t.Errorf("subflows without a scheduler: %q", out)
	}
}

// `sched upgrade` says what the kernel did with each scheduler: skipped,
// replaced in place, or re-registered after the kernel refused the update,
// with its answer, the missing operation and the window.
func TestSchedUpgradeText(t *testing.T) {
	from, to := structops.Build{Version: "v0.1.0"}, structops.Build{Version: "v0.2.0", Generation: 1}
	for _, c := range []struct {
		u    sched.Upgraded
		want []string
	}{
		{sched.Upgraded{Name: "m1", To: from, Skipped: true}, []string{"m1: already this build (v0.1.0); --force replaces it anyway"}},
		{sched.Upgraded{Name: "m1", From: from, To: to, Recorded: true, InPlace: true}, []string{"m1: v0.1.0 -> v0.2.0 (generation 1); connections already open keep v0.1.0 until they close; replaced in place"}},
		{sched.Upgraded{Name: "m1", To: to, Refused: "BPF_LINK_UPDATE: operation not supported", Window: 42 * time.Microsecond}, []string{
			"m1: an unrecorded build -> v0.2.0 (generation 1)",
			"the kernel refused to replace it in place (BPF_LINK_UPDATE: operation not supported: the kernel's MPTCP scheduler hook has no struct_ops update operation",
			"the name was unregistered for 42µs", "the kernel's default scheduler"}},
	} {
		got := describeSchedUpgrade(c.u)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%+v:\n%s\nlacks %q", c.u, got, w)
			}
		}
	}
}
