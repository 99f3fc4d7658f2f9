// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/events"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
)

// `top` shows what a path controller holds: the PATH column (best-path on
// the kernel's subflow id, a trial, a refused flag), the backup flags on
// the subflow rows, and the controlled connections that have no row.
func TestTopPathctl(t *testing.T) {
	subs := twoScheduled()
	for i := range subs {
		subs[i].Sched = nil
	}
	subs[1].Backup, subs[1].BackupRemote = true, true
	var s events.Sampler
	f := s.Frame(subs, nil, time.Unix(1e9, 0))
	now := time.Unix(1e9, 0)
	f.JoinPathctl([]pathctl.State{
		{PID: 1, Program: "serve", Connections: []pathctl.ConnState{
			{Netns: "", Token: "00000abc", Mode: "best-path", Best: "10.0.0.1:4000->10.1.0.1:80", Backup: []string{"10.0.1.1:4001->10.1.0.1:80"}, Since: now.Add(-time.Minute), Switches: 2},
			{Netns: "lab", Token: "00000def", Mode: "multipath", Trial: true, Reason: "trial of multipath", Since: now.Add(-5 * time.Second), Switches: 1},
		}},
		// The same token in another namespace, holding subflows this row
		// does not have: not this row's.
		{PID: 2, Program: "pathctl", Connections: []pathctl.ConnState{
			{Netns: "other", Token: "00000abc", Mode: "best-path", Best: "10.9.0.1:1->10.1.0.1:80", Since: now, Error: "refused"},
		}},
	})
	var b bytes.Buffer
	renderTop(&b, f, "token", time.Second, nil, 0, false)
	out := b.String()
	t.Logf("\n%s", out)
	var conn, sf2, plain string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "00000abc") && strings.Contains(l, "mptcp_olia"):
			conn = l
		case strings.Contains(l, "sf 2"):
			sf2 = l
		case strings.HasPrefix(l, "(tcp)"):
			plain = l
		}
	}
	if !strings.Contains(out, "AGE  PATH") || !strings.HasSuffix(conn, "best-path sf 1") {
		t.Errorf("PATH column: connection row %q", conn)
	}
	if !strings.Contains(sf2, "open,backup,peer-backup") {
		t.Errorf("subflow 2's flags: %q", sf2)
	}
	if !strings.HasSuffix(plain, "-") {
		t.Errorf("an uncontrolled connection's PATH: %q", plain)
	}
	for _, want := range []string{
		"path controller, connections running no mptcp-cc congestion control:",
		"00000abc  other  best-path 10.9.0.1:1->10.1.0.1:80 !  0         0s",
		"00000def  lab    trial: multipath                     1         5s     trial of multipath",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("top lacks %q", want)
		}
	}

	js, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Connections []struct {
			Token    string
			PathCtl  *pathctl.ConnState `json:"pathctl"`
			Subflows []struct {
				Backup       bool `json:"backup"`
				BackupRemote bool `json:"backup_remote"`
			}
		}
		Unlisted []pathctl.ConnState `json:"pathctl_unlisted"`
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	c, plainRow := back.Connections[1], back.Connections[0]
	if c.Token != "00000abc" || c.PathCtl == nil || c.PathCtl.Best != "10.0.0.1:4000->10.1.0.1:80" || !c.Subflows[1].Backup || !c.Subflows[1].BackupRemote || c.Subflows[0].Backup {
		t.Errorf("JSON connection %+v", c)
	}
	if plainRow.PathCtl != nil || len(back.Unlisted) != 2 {
		t.Errorf("JSON: plain TCP %+v, unlisted %+v", plainRow.PathCtl, back.Unlisted)
	}

	// `subflows` shows the flags in its STATE column too.
	b.Reset()
	if err := printSubflows(&b, subs, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "open,backup,peer-backup") || strings.Count(b.String(), "backup") != 2 {
		t.Errorf("subflows:\n%s", b.String())
	}

	// No controller: the view is as it was.
	f.JoinPathctl(nil)
	b.Reset()
	renderTop(&b, f, "token", time.Second, nil, 0, false)
	if strings.Contains(b.String(), "PATH") || strings.Contains(b.String(), "path controller") {
		t.Errorf("without a controller:\n%s", b.String())
	}
}

// On this host's kernel: while `mptcp-cc pathctl` controls a transfer where
// aggregation hurts, `top --json` shows the controller's mode and, from the
// kernel, the bad path's subflow flagged backup; once the controller is
// interrupted, neither.
func TestTopPathctlLive(t *testing.T) {
	root := testkernel.PinRoot(t)
	n := testkernel.HurtingPaths(t, true)
	name := testkernel.Load(t, root, "lia", cc.Params{RSFTarget: cc.DefaultRSFTarget})
	srv := testkernel.Serve(t, n)
	c := testkernel.Start(t, n, srv, xfer.Options{CC: name, For: 12 * time.Second})
	token := fmt.Sprintf("%08x", testkernel.Token(t, n.Client, c.Local()))

	state := t.TempDir()
	bin := testenv.Binary(t, ".")
	ctl := exec.Command(bin, "pathctl", "--token", token, "--netns", n.Client, "--apply", "endpoint", "--period", "250ms", "--state-dir", state)
	var ctlOut testenv.SyncBuffer
	ctl.Stdout, ctl.Stderr = &ctlOut, &ctlOut
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ctl.ProcessState == nil {
			_ = ctl.Process.Kill()
			_ = ctl.Wait()
		}
	})

	type row struct {
		Token    string
		PathCtl  *pathctl.ConnState `json:"pathctl"`
		Subflows []struct {
			Local  string
			Backup bool
		}
	}
	top := func() (row, string) {
		out, err := exec.Command(bin, "top", "--once", "--json", "--bpffs", root, "--netns", n.Client, "--pathctl-state", state, "--interval", "100ms").Output()
		if err != nil {
			t.Fatalf("top: %v", err)
		}
		var f struct{ Connections []row }
		if err := json.Unmarshal(out, &f); err != nil {
			t.Fatalf("top --json: %v\n%s", err, out)
		}
		for _, r := range f.Connections {
			if r.Token == token {
				return r, string(out)
			}
		}
		t.Fatalf("top does not list %s:\n%s", token, out)
		return row{}, ""
	}
	badFlagged := func(r row) bool {
		for _, s := range r.Subflows {
			if strings.HasPrefix(s.Local, "10.0.1.1:") {
				return s.Backup
			}
		}
		return false
	}
	start := time.Now()
	for {
		r, out := top()
		if r.PathCtl != nil && r.PathCtl.Mode == "best-path" && !r.PathCtl.Trial && badFlagged(r) {
			t.Logf("top showed best-path with the bad path backup after %v: %+v", time.Since(start).Round(time.Millisecond), *r.PathCtl)
			break
		}
		if time.Since(start) > 12*time.Second {
			t.Fatalf("after 12 s top shows %s\ncontroller said:\n%s", out, ctlOut.String())
		}
	}
	if err := ctl.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Wait(); err != nil {
		t.Fatalf("pathctl after SIGINT: %v\n%s", err, ctlOut.String())
	}
	if r, out := top(); r.PathCtl != nil || badFlagged(r) {
		t.Errorf("after the controller stopped, top shows %s", out)
	}
	if _, err := c.Wait(); err != nil {
		t.Fatal(err)
	}
}
