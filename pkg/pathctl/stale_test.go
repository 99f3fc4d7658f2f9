// SPDX-License-Identifier: Apache-2.0

package pathctl

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
)

// A controller killed in best-path mode leaves its endpoint flagged
// backup, and its state file says so. The next start clears that flag
// (and only that: another endpoint flagged by someone else, and the file
// of a controller still running, stay) and removes the file.
func TestClearLeftFlags(t *testing.T) {
	ns := testenv.Namespace(t, "mpcc-stale")
	pm, err := mptcpnl.DialNS(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	left, other := netip.MustParseAddr("10.77.0.1"), netip.MustParseAddr("10.77.1.1")
	for _, a := range []netip.Addr{left, other} {
		if err := pm.AddEndpoint(mptcpnl.Endpoint{Addr: a, Flags: mptcpnl.FlagSubflow | mptcpnl.FlagBackup}); err != nil {
			t.Fatal(err)
		}
	}
	dead := 4194000 // a pid no process has
	for unix.Kill(dead, 0) == nil || !errors.Is(unix.Kill(dead, 0), unix.ESRCH) {
		dead--
	}
	dir := t.TempDir()
	write := func(pid int, s State) string {
		t.Helper()
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, strconv.Itoa(pid)+".json")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	killed := write(dead, State{PID: dead, Program: "serve", Connections: []ConnState{
		{Netns: ns, Token: "00000001", Apply: PerEndpoint, Backup: []string{"10.77.0.1:40000->10.1.0.1:5201"}},
		{Netns: ns, Token: "00000002", Apply: PerConnection, Backup: []string{"10.77.1.1:40001->10.1.0.1:5201"}},
	}})
	running := write(os.Getpid(), State{PID: os.Getpid(), Program: "pathctl", Connections: []ConnState{
		{Netns: ns, Token: "00000003", Apply: PerEndpoint, Backup: []string{"10.77.1.1:40002->10.1.0.1:5201"}},
	}})

	cleared, err := ClearLeftFlags(dir)
	if err != nil || len(cleared) != 1 {
		t.Fatalf("cleared %q, %v; want the one endpoint the killed controller flagged", cleared, err)
	}
	eps, err := pm.Endpoints()
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		backup := ep.Flags&mptcpnl.FlagBackup != 0
		if ep.Addr == left && backup || ep.Addr == other && !backup {
			t.Errorf("endpoint %v: backup %v; want cleared only on %v", ep.Addr, backup, left)
		}
	}
	if _, err := os.Stat(killed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed controller's state file is still there: %v", err)
	}
	if _, err := os.Stat(running); err != nil {
		t.Errorf("the running controller's state file was touched: %v", err)
	}
}
