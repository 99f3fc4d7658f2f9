// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/servetest"
	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// A full subflows map breaks no connection: with room for one subflow,
// three two-subflow connections all complete with their bytes, the
// subflows that found the map full are counted, and list, top and the
// metrics say so; at the end the map is empty.
func TestSubflowsMapFull(t *testing.T) {
	root := testkernel.PinRoot(t)
	bin := testenv.Binary(t, ".")
	n := testkernel.TwoPaths(t, 20e6)
	name := testenv.Unique("t_full_")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--bpffs", root)...).CombinedOutput()
		if err != nil {
			t.Fatalf("mptcp-cc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("load", "--algo", "lia", "--name", name, "--max-subflows", "1")
	testkernel.UnloadAtCleanup(t, root, name)

	srv := testkernel.Serve(t, n)
	var clients []*xfer.Client
	for range 3 {
		clients = append(clients, testkernel.Start(t, n, srv, xfer.Options{CC: name, Bytes: 4 << 20}))
	}
	for i, c := range clients {
		res, err := c.Wait()
		if err != nil {
			t.Fatalf("connection %d with the map full: %v", i, err)
		}
		if res.CC != name {
			t.Errorf("connection %d ran %q, not %s", i, res.CC, name)
		}
		testkernel.Receipt(t, "a connection with the map full", res, 4<<20)
	}

	loaded, err := cc.List(root)
	if err != nil || len(loaded) != 1 {
		t.Fatalf("list: %v %+v", err, loaded)
	}
	untracked := loaded[0].Untracked
	t.Logf("%d of 6 subflows found the map full", untracked)
	if untracked < 3 || untracked > 5 {
		t.Fatalf("%d subflows counted as untracked; want 3-5 of the 6 client subflows (one slot)", untracked)
	}
	if out := run("list"); !strings.Contains(out, "found the map full") {
		t.Errorf("list does not say the map was full:\n%s", out)
	}
	var frame struct {
		Untracked map[string]uint64 `json:"untracked_subflows"`
	}
	if err := json.Unmarshal([]byte(run("top", "--once", "--json", "--interval", "100ms")), &frame); err != nil || frame.Untracked[name] != untracked {
		t.Errorf("top --json: %v, untracked %v; want %s: %d", err, frame.Untracked, name, untracked)
	}
	if out := run("top", "--once", "--interval", "100ms"); !strings.Contains(out, "found the subflows map full since load") || !strings.Contains(out, name) {
		t.Errorf("top does not say the map was full:\n%s", out)
	}

	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("bpffs: %s\nmetrics: {listen_address: \"127.0.0.1:0\"}\nevents: {enabled: false}\n", root)), 0o600); err != nil {
		t.Fatal(err)
	}
	d := servetest.Start(t, bin, config)
	want := fmt.Sprintf(`mptcp_cc_algorithm_untracked_subflows_total{cc="%s",algo="lia"} %d`, name, untracked)
	if body := servetest.Get(t, d.Ready()); !strings.Contains(body, want) {
		t.Errorf("the metrics have no %s:\n%s", want, servetest.Lines(body, "untracked"))
	}
	d.Stop(syscall.SIGTERM)
	for deadline := time.Now().Add(3 * time.Second); len(testkernel.Subflows(t, root, name)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("subflow entries left after every connection closed")
		}
	}
}
