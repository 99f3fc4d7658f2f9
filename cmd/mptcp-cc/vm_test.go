// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/events"
	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// TestInVM builds mptcp-cc, boots the test kernel (the only one here with
// the BPF scheduler hook) once and runs every TestGuest* of this package
// inside it, with the binary staged beside the test's (the guest cannot
// build it: read-only tree, and a TCG VM would take minutes).
func TestInVM(t *testing.T) {
	testenv.RequireRoot(t)
	vmtest.Kernel(t)
	vmtest.RunTests(t, "^TestGuest", 4*time.Minute, testenv.Binary(t, "."))
}

// The CLI on a kernel with the scheduler hook, run as a user would: `sched
// load minrtt`, `sched list --json` shows it registered, `sched use` gives
// it to the client's namespace, the subflows of a transfer there show what
// it gave each of them, `sched unload` in the middle of the transfer lets
// it finish intact, and nothing of the scheduler stays pinned.
func TestGuestSchedCLI(t *testing.T) {
	vmtest.Guest(t)
	bin := vmtest.Staged(t, "mptcp-cc")
	root := testkernel.PinRoot(t)
	schedRoot := filepath.Join(filepath.Dir(root), "sched")
	run := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("mptcp-cc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	list := func() (l schedList) {
		t.Helper()
		if err := json.Unmarshal(run("sched", "list", "--json", "--bpffs", schedRoot), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}

	name := testenv.Unique("t_cli_")
	t.Log(strings.TrimSpace(string(run("sched", "load", "minrtt", "--name", name, "--bpffs", schedRoot))))
	t.Cleanup(func() {
		if sched.IsRegistered(name) {
			_ = sched.Unload(name, schedRoot)
		}
	})
	l := list()
	i := slices.IndexFunc(l.Loaded, func(s schedLoaded) bool { return s.Name == name })
	if i < 0 || l.Loaded[i].Algo != "minrtt" || !l.Loaded[i].Registered || !slices.Contains(l.Available, name) {
		t.Fatalf("sched list after the load: %+v", l)
	}

	// A coupled CC too: the subflows the CC's map lists are those
	// `subflows` shows, with the scheduler's counters joined.
	ccName := testkernel.Load(t, root, "lia", cc.Params{RSFTarget: cc.DefaultRSFTarget})
	n := testkernel.TwoPaths(t, 4e6)
	t.Log(strings.TrimSpace(string(run("sched", "use", name, "--netns", n.Client))))
	if cur, err := sched.Current(n.Client); err != nil || cur != name {
		t.Fatalf("the client's scheduler after sched use: %q, %v", cur, err)
	}
	if i := slices.IndexFunc(list().Netns, func(e schedNetns) bool { return e.Netns == n.Client }); i < 0 || list().Netns[i].Scheduler != name {
		t.Errorf("sched list does not show %s on %s: %+v", name, n.Client, list().Netns)
	}

	_, c := testkernel.Transfer(t, n, xfer.Options{CC: ccName, For: 10 * time.Second})
	var subs []stats.Subflow
	for deadline := time.Now().Add(8 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if err := json.Unmarshal(run("subflows", "--json", "--bpffs", root, "--sched-bpffs", schedRoot), &subs); err != nil {
			t.Fatal(err)
		}
		scheduled := 0
		for _, s := range subs {
			if s.Sched != nil && s.Sched.Name == name && s.Sched.Algo == "minrtt" && s.Sched.Sends > 0 && s.Sched.BurstBytes > 0 {
				scheduled++
			}
		}
		if scheduled == 2 || time.Now().After(deadline) {
			break
		}
	}
	for _, s := range subs {
		t.Logf("subflow %d %v -> %v: cwnd %d, scheduler %+v", s.SubflowID, s.Local, s.Remote, s.Cwnd, s.Sched)
	}
	if len(subs) != 2 || subs[0].Sched == nil || subs[1].Sched == nil || subs[0].Sched.Sends == 0 || subs[1].Sched.Sends == 0 {
		t.Errorf("subflows --json: want both subflows with %s's sends", name)
	}
	text := string(run("subflows", "--bpffs", root, "--sched-bpffs", schedRoot))
	t.Logf("subflows:\n%s", text)
	if !strings.Contains(text, "SCHED") || strings.Count(text, name) != 2 {
		t.Errorf("the subflows table lacks the scheduler's columns")
	}
	var frame events.Frame
	if err := json.Unmarshal(run("top", "--once", "--json", "--no-events", "--interval", "200ms", "--bpffs", root, "--sched-bpffs", schedRoot), &frame); err != nil {
		t.Fatal(err)
	}
	if len(frame.Connections) != 1 || !slices.ContainsFunc(frame.Connections[0].Subflows, func(s events.SubflowRow) bool { return s.Sched != nil && s.Sched.Name == name }) {
		t.Errorf("top --json: no subflow with %s's counters: %+v", name, frame.Connections)
	}

	// The metrics, read the way serve reads them.
	var exp strings.Builder
	src := stats.Pinned{Root: root, SchedRoot: schedRoot, Netns: []string{n.Client}}
	if err := metrics.NewCollector(src, metrics.Options{MaxSubflows: 10}).WriteText(&exp); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"mptcp_cc_scrape_error 0",
		`mptcp_cc_scheduler_registered{scheduler="` + name + `",algo="minrtt"} 1`,
		`mptcp_cc_netns_scheduler_info{netns="` + n.Client + `",scheduler="` + name + `"} 1`,
		`scheduler="` + name + `",kind="send"}`,
		`mptcp_cc_subflow_scheduler_burst_bytes_total{cc="` + ccName + `"`,
	} {
		if !strings.Contains(exp.String(), want) {
			t.Errorf("the metrics lack %s", want)
		}
	}

	// Unloaded in the middle of the transfer: the connection keeps the
	// scheduler it has (the kernel holds it) and finishes intact.
	sentAtUnload := c.Sent()
	t.Log(strings.TrimSpace(string(run("sched", "unload", name, "--bpffs", schedRoot))))
	if sched.IsRegistered(name) {
		t.Errorf("%s still registered after sched unload", name)
	}
	res, err := c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("transfer: %d bytes in %v, %d of them written after the unload", res.Delivered, res.Duration.Round(time.Millisecond), res.Sent-sentAtUnload)
	if !res.Intact || res.Delivered != res.Sent || res.Sent-sentAtUnload <= 0 {
		t.Errorf("transfer: %+v (%d bytes sent at the unload)", res, sentAtUnload)
	}
	if l := list(); len(l.Loaded) != 0 || slices.Contains(l.Available, name) {
		t.Errorf("sched list after the unload: %+v", l)
	}
	for _, p := range testkernel.Pins(t, filepath.Dir(root)) {
		if p == "sched" || strings.HasPrefix(p, "sched/") {
			t.Errorf("left pinned: %s", p)
		}
	}
}
