// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/servetest"
	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

// serve as an operator runs it on a kernel with the scheduler hook: a
// config that loads a coupled CC and a scheduler and gives the scheduler to
// a namespace. /metrics then says which scheduler the namespace uses and
// what it gave each subflow of a transfer there; a reload (SIGHUP) that
// swaps the scheduler for another in the middle of the transfer lets it
// finish intact, and the next connection runs the new one; on_exit remove
// leaves nothing registered or pinned and gives the namespace the kernel's
// default back.
func TestGuestServeSched(t *testing.T) {
	vmtest.Guest(t)
	bin := vmtest.Staged(t, "mptcp-cc")
	root := testkernel.PinRoot(t)
	schedRoot := filepath.Join(filepath.Dir(root), "sched")
	n := testkernel.TwoPaths(t, 4e6)
	ccName, first, second := testenv.Unique("t_srv_"), testenv.Unique("t_rr_"), testenv.Unique("t_min_")
	t.Cleanup(func() {
		for _, s := range []string{first, second} {
			if sched.IsRegistered(s) {
				_ = sched.Unload(s, schedRoot)
			}
		}
	})
	testkernel.UnloadAtCleanup(t, root, ccName)
	config := func(algo, name string) string {
		return fmt.Sprintf(`bpffs: %s
sched_bpffs: %s
on_exit: remove
algorithms:
  - {algo: lia, name: %s}
schedulers:
  - {algo: %s, name: %s}
netns_schedulers:
  - {netns: %s, scheduler: %s}
metrics: {listen_address: "127.0.0.1:0"}
events: {enabled: false}
`, root, schedRoot, ccName, algo, name, n.Client, name)
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(config("rr", first)), 0o600); err != nil {
		t.Fatal(err)
	}
	d := servetest.Start(t, bin, file)
	url := d.Ready()
	if cur, err := sched.Current(n.Client); err != nil || cur != first {
		t.Fatalf("the client's scheduler with serve up: %q, %v; want %s", cur, err, first)
	}

	// rr on two equal paths: both subflows get sends and bytes.
	_, c := testkernel.Transfer(t, n, xfer.Options{CC: ccName, For: 8 * time.Second})
	var body string
	for deadline := time.Now().Add(6 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		body = servetest.Get(t, url)
		if len(positive(body, "mptcp_cc_subflow_scheduler_burst_bytes_total", first)) == 2 || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range []string{
		"mptcp_cc_scrape_error 0",
		"mptcp_cc_schedulers_loaded 1",
		`mptcp_cc_scheduler_registered{scheduler="` + first + `",algo="rr"} 1`,
		`mptcp_cc_netns_scheduler_info{netns="` + n.Client + `",scheduler="` + first + `"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	bursts := positive(body, "mptcp_cc_subflow_scheduler_burst_bytes_total", first)
	sends := positive(body, "mptcp_cc_subflow_scheduler_decisions_total", first, `kind="send"`)
	t.Logf("%s's per-subflow bursts:\n%s", first, strings.Join(bursts, "\n"))
	if len(bursts) != 2 || len(sends) != 2 {
		t.Errorf("want both subflows with %s's sends and bytes, got %d and %d:\n%s", first, len(sends), len(bursts), servetest.Lines(body, "subflow_scheduler"))
	}

	// The reload swaps rr for minrtt while the connection runs rr.
	sentAtReload := c.Sent()
	if err := os.WriteFile(file, []byte(config("minrtt", second)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	d.WaitLog("configuration reloaded", 1)
	if cur, err := sched.Current(n.Client); err != nil || cur != second {
		t.Errorf("the client's scheduler after the reload: %q, %v; want %s", cur, err, second)
	}
	if sched.IsRegistered(first) || !sched.IsRegistered(second) {
		t.Errorf("after the reload: %s registered %v (want false), %s %v (want true)", first, sched.IsRegistered(first), second, sched.IsRegistered(second))
	}
	res, err := c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("transfer across the reload: %d bytes in %v, %d written after it", res.Delivered, res.Duration.Round(time.Millisecond), res.Sent-sentAtReload)
	if !res.Intact || res.Delivered != res.Sent || res.Sent <= sentAtReload {
		t.Errorf("transfer across the reload: %+v (%d sent at the reload)", res, sentAtReload)
	}

	// A new connection runs minrtt, and /metrics says so.
	_, c = testkernel.Transfer(t, n, xfer.Options{CC: ccName, For: 3 * time.Second})
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		body = servetest.Get(t, url)
		if len(positive(body, "mptcp_cc_subflow_scheduler_decisions_total", second, `kind="send"`)) > 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range []string{
		"mptcp_cc_scrape_error 0",
		`mptcp_cc_scheduler_registered{scheduler="` + second + `",algo="minrtt"} 1`,
		`mptcp_cc_netns_scheduler_info{netns="` + n.Client + `",scheduler="` + second + `"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics after the reload lacks %s", want)
		}
	}
	if strings.Contains(body, `scheduler="`+first+`"`) {
		t.Errorf("/metrics still shows %s after the reload removed it:\n%s", first, servetest.Lines(body, first))
	}
	if len(positive(body, "mptcp_cc_subflow_scheduler_decisions_total", second, `kind="send"`)) == 0 {
		t.Errorf("no subflow with %s's sends:\n%s", second, servetest.Lines(body, "subflow_scheduler"))
	}
	if res, err = c.Wait(); err != nil {
		t.Fatal(err)
	}
	if !res.Intact || res.Delivered != res.Sent {
		t.Errorf("transfer under %s: %+v", second, res)
	}

	if code := d.Stop(syscall.SIGTERM); code != 0 {
		t.Errorf("serve exited %d on SIGTERM:\n%s", code, d.Logs())
	}
	if sched.IsRegistered(second) {
		t.Errorf("%s still registered after serve stopped with on_exit remove", second)
	}
	if cur, err := sched.Current(n.Client); err != nil || cur != "default" {
		t.Errorf("the client's scheduler after serve stopped: %q, %v; want default", cur, err)
	}
	if _, err := os.Stat(schedRoot); err == nil { // on_exit remove may take the directory too
		if left := testkernel.Pins(t, schedRoot); len(left) != 0 {
			t.Errorf("left pinned under %s: %v", schedRoot, left)
		}
	}
	if strings.Contains(d.Logs(), "level=ERROR") {
		t.Errorf("serve logged errors:\n%s", d.Logs())
	}
}

// positive returns the samples of family whose labels contain every one
// of labels (a bare word w matches scheduler="w") and whose value is > 0.
func positive(body, family string, labels ...string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, family+"{") {
			continue
		}
		match := true
		for _, l := range labels {
			if !strings.Contains(l, "=") {
				l = `scheduler="` + l + `"`
			}
			match = match && strings.Contains(line, l)
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); match && err == nil && v > 0 {
			out = append(out, line)
		}
	}
	return out
}
