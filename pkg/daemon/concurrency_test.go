// SPDX-License-Identifier: Apache-2.0

package daemon_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/servetest"
	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
)

// With 1,000 live MPTCP connections x 2 subflows, every reader counts the
// same: `mptcp-cc subflows`, `top --once` and the daemon's metrics.
func TestThousandConnectionsEveryReaderAgrees(t *testing.T) {
	const conns = 1000
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 0)
	name := testenv.Unique("t_conc_")
	testkernel.UnloadAtCleanup(t, root, name)
	d := startDaemon(t, fmt.Sprintf(`
bpffs: %s
on_exit: remove
algorithms: [{algo: olia, name: %s}]
metrics: {listen_address: "127.0.0.1:0"}
events: {enabled: false}
`, root, name))
	url := d.Ready()
	closeAll := idleConnections(t, n, name, conns)
	defer closeAll()
	waitSubflows(t, url, name, 2*conns)

	body := servetest.Get(t, url)
	if want := fmt.Sprintf(`mptcp_cc_algorithm_connections{cc="%s",algo="olia"} %d`, name, conns); !strings.Contains(body, want) {
		t.Errorf("metrics: want %s, have:\n%s", want, servetest.Lines(body, "algorithm_connections"))
	}
	run := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(mptcpCC(t), append(args, "--bpffs", root)...).Output()
		if err != nil {
			t.Fatalf("mptcp-cc %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	var subs []struct {
		CC    string `json:"cc"`
		Token uint32 `json:"token"`
	}
	if err := json.Unmarshal(run("subflows", "--json"), &subs); err != nil {
		t.Fatal(err)
	}
	tokens := map[uint32]int{}
	for _, s := range subs {
		if s.CC == name {
			tokens[s.Token]++
		}
	}
	if len(subs) != 2*conns || len(tokens) != conns {
		t.Errorf("subflows --json: %d subflows of %d connections, want %d of %d", len(subs), len(tokens), 2*conns, conns)
	}
	var frame struct {
		Connections []struct {
			Subflows []json.RawMessage `json:"subflows"`
		} `json:"connections"`
		Subflows int `json:"subflows"`
	}
	if err := json.Unmarshal(run("top", "--once", "--json", "--interval", "200ms"), &frame); err != nil {
		t.Fatal(err)
	}
	two := 0
	for _, c := range frame.Connections {
		if len(c.Subflows) == 2 {
			two++
		}
	}
	if frame.Subflows != 2*conns || len(frame.Connections) != conns || two != conns {
		t.Errorf("top --once: %d subflows, %d connections (%d with 2 subflows); want %d, %d", frame.Subflows, len(frame.Connections), two, 2*conns, conns)
	}
	if code := d.Stop(syscall.SIGTERM); code != 0 {
		t.Errorf("SIGTERM: exit %d\n%s", code, d.Logs())
	}
}
