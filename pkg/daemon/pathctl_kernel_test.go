// SPDX-License-Identifier: Apache-2.0

package daemon_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/servetest"
	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/daemon"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// kernelBackup is the kernel's view of a namespace's MPTCP subflows:
// whether each (by local address) carries the local backup flag, per token.
func kernelBackup(t *testing.T, ns string) map[uint32]map[netip.Addr]bool {
	t.Helper()
	socks, err := sockdiag.Dump(ns, 2, sockdiag.StateSet(sockdiag.Established))
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]map[netip.Addr]bool{}
	for _, s := range socks {
		if s.MPTCP && s.Token != 0 {
			if out[s.Token] == nil {
				out[s.Token] = map[netip.Addr]bool{}
			}
			out[s.Token][s.Local.Addr()] = s.BackupLocal
		}
	}
	return out
}

func hexToken(t uint32) string { return fmt.Sprintf("%08x", t) }

var switchLine = regexp.MustCompile(`(?m)^mptcp_cc_pathctl_switches_total\{cause="([a-z]+)",netns="([^"]+)",to="([a-z-]+)"\} (\d+)$`)

// End to end on this host's kernel: the daemon, told to control the
// connections to one port in a namespace, finds a transfer's connection
// as it is established and, where aggregation hurts (pkg/pathctl's bad
// paths: a long, lossy, slow second path and a receive buffer of about the
// good path's BDP), flags the bad path's endpoint backup - the kernel
// reports the subflow flagged. The switch is logged and counted; at
// shutdown the flag is cleared.
func TestPathctlDaemonEndToEnd(t *testing.T) {
	n := testkernel.HurtingPaths(t, true)
	srv := testkernel.Serve(t, n)
	// Another connection in the namespace, to another port: left alone.
	other := testkernel.Serve(t, n)

	state := t.TempDir()
	cfg := daemon.Config{
		BPFFS:   filepath.Join(t.TempDir(), "cc"),
		Metrics: daemon.Metrics{ListenAddress: "127.0.0.1:0"},
		Events:  daemon.Events{Enabled: new(bool)},
		Pathctl: daemon.Pathctl{Enabled: true, OwnNetns: new(bool), Namespaces: []string{n.Client}, Apply: "endpoint",
			Period: 250 * time.Millisecond, Ports: []uint16{srv.Addr().Port()}, StateDir: state},
	}
	var logs testenv.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, cfg, daemon.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Ready: func(a net.Addr) { ready <- a }})
	}()
	var url string
	select {
	case a := <-ready:
		url = "http://" + a.String() + "/metrics"
	case err := <-done:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not start in 30 s")
	}

	c := testkernel.Start(t, n, srv, xfer.Options{For: 14 * time.Second})
	oc := testkernel.Start(t, n, other, xfer.Options{Bytes: 1 << 20})
	token := testkernel.Token(t, n.Client, c.Local())
	otherToken := testkernel.Token(t, n.Client, oc.Local())
	hex := hexToken(token)
	bad := topo.ClientAddr(1)

	start := time.Now()
	for !kernelBackup(t, n.Client)[token][bad] || !strings.Contains(logs.String(), "token="+hex+" mode=best-path") {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("after 15 s, kernel view %v; daemon log:\n%s", kernelBackup(t, n.Client), logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the bad path was flagged backup after %v", time.Since(start).Round(time.Millisecond))
	line := regexp.MustCompile(`msg="path controller switched" netns=` + regexp.QuoteMeta(n.Client) + ` token=` + hex + ` mode=\S+ to=best-path best=10\.0\.0\.1:\d+->10\.1\.0\.1:\d+ cause=\w+ reason=`)
	if !line.MatchString(logs.String()) {
		t.Errorf("no switch line like %s in:\n%s", line, logs.String())
	}

	// Counted, and the gauge has the connection; the other one is not
	// controlled (its port is not in the filter).
	body := servetest.Get(t, url)
	toBest := 0
	for _, m := range switchLine.FindAllStringSubmatch(body, -1) {
		if m[2] == n.Client && m[3] == "best-path" {
			v, _ := strconv.Atoi(m[4])
			toBest += v
		}
	}
	if toBest == 0 {
		t.Errorf("no switch to best-path counted:\n%s", servetest.Lines(body, "mptcp_cc_pathctl_"))
	}
	var controlled int
	for _, mode := range []string{"multipath", "best-path", "trial"} {
		m := regexp.MustCompile(`mptcp_cc_pathctl_connections\{mode="` + mode + `",netns="` + regexp.QuoteMeta(n.Client) + `"\} (\d+)`).FindStringSubmatch(body)
		if m != nil {
			v, _ := strconv.Atoi(m[1])
			controlled += v
		}
	}
	if controlled != 1 {
		t.Errorf("%d connections controlled, want 1 (the other's port is filtered out):\n%s", controlled, servetest.Lines(body, "mptcp_cc_pathctl_"))
	}
	st, err := pathctl.ReadStates(state)
	if err != nil || len(st) != 1 || len(st[0].Connections) != 1 || st[0].Connections[0].Token != hex {
		t.Errorf("published state %+v %v", st, err)
	}
	left := `msg="path controller: connection left alone by the filter" netns=` + n.Client + " token=" + hexToken(otherToken)
	if !strings.Contains(logs.String(), left) || strings.Contains(logs.String(), "controlling a connection\" netns="+n.Client+" token="+hexToken(otherToken)) {
		t.Errorf("the connection to another port was not left alone (%s):\n%s", left, logs.String())
	}

	t.Logf("logged:\n%s", servetest.Lines(logs.String(), "path controller switched"))
	t.Logf("metrics:\n%s", servetest.Lines(body, "pathctl_switches_total{cause=\"trial\"")+"\n"+servetest.Lines(body, "pathctl_connections"))

	// Shutdown while the transfer runs: no flag is left, on the subflow or
	// the endpoint.
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for a, f := range kernelBackup(t, n.Client)[token] {
		if f {
			t.Errorf("subflow from %v still flagged backup after the daemon stopped", a)
		}
	}
	testkernel.NoBackupEndpoint(t, n.Client)
	if st, _ := pathctl.ReadStates(state); len(st) != 0 {
		t.Errorf("state left after shutdown: %+v", st)
	}
	for _, cl := range []*xfer.Client{c, oc} {
		res, err := cl.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if res.Delivered != res.Sent {
			t.Errorf("sent %d, delivered %d", res.Sent, res.Delivered)
		}
	}
}
