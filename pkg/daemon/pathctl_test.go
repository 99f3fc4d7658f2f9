// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// fakePaths stands for the kernel: the test reports connections through
// the watches and ends controllers; each controller is recorded.
type fakePaths struct {
	mu       sync.Mutex
	watches  map[string]func(ConnChange) // by namespace
	watchErr map[string]error            // Watch of this namespace fails
	ctrls    []*fakeCtrl
}

// fakeCtrl is one Control call.
type fakeCtrl struct {
	o        pathctl.Options
	ctx      context.Context
	end      chan error // the test ends it (the connection closed: nil)
	done     chan error // what Control returned
	returned bool       // under fakePaths.mu
}

func newFakePaths() *fakePaths {
	return &fakePaths{watches: map[string]func(ConnChange){}, watchErr: map[string]error{}}
}

func (f *fakePaths) Watch(ctx context.Context, ns string, report func(ConnChange)) error {
	f.mu.Lock()
	if err := f.watchErr[ns]; err != nil {
		f.mu.Unlock()
		return err
	}
	f.watches[ns] = report
	f.mu.Unlock()
	report(ConnChange{Kind: Watching, How: "events"})
	<-ctx.Done()
	f.mu.Lock()
	delete(f.watches, ns)
	f.mu.Unlock()
	return nil
}

func (f *fakePaths) Control(ctx context.Context, o pathctl.Options) error {
	c := &fakeCtrl{o: o, ctx: ctx, end: make(chan error, 1), done: make(chan error, 1)}
	f.mu.Lock()
	f.ctrls = append(f.ctrls, c)
	f.mu.Unlock()
	var err error
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case err = <-c.end:
	}
	f.mu.Lock()
	c.returned = true
	f.mu.Unlock()
	c.done <- err
	return err
}

// report sends a change through ns's watch, once it is watched.
func (f *fakePaths) report(t *testing.T, ns string, c ConnChange) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		f.mu.Lock()
		r := f.watches[ns]
		f.mu.Unlock()
		if r != nil {
			r(c)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %q is not watched", ns)
		}
	}
}

func (f *fakePaths) watched() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for ns := range f.watches {
		out = append(out, nsName(ns))
	}
	slices.Sort(out)
	return out
}

// running lists the controllers still running, as netns/token.
func (f *fakePaths) running() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.ctrls {
		if !c.returned {
			out = append(out, fmt.Sprintf("%s/%x", nsName(c.o.NS), c.o.Token))
		}
	}
	slices.Sort(out)
	return out
}

// ctrl is the newest controller of a connection.
func (f *fakePaths) ctrl(t *testing.T, ns string, token uint32) *fakeCtrl {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.ctrls) - 1; i >= 0; i-- {
		if c := f.ctrls[i]; c.o.NS == ns && c.o.Token == token {
			return c
		}
	}
	t.Fatalf("no controller of %s/%x", nsName(ns), token)
	return nil
}

// waitRunning waits until exactly these controllers run.
func waitRunning(t *testing.T, f *fakePaths, want ...string) {
	t.Helper()
	slices.Sort(want)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		got := f.running()
		if slices.Equal(got, want) || len(got) == 0 && len(want) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("running controllers %v, want %v", got, want)
		}
	}
}

func conn(token uint32, local, remote string) PathConn {
	return PathConn{Token: token, Local: netip.MustParseAddrPort(local), Remote: netip.MustParseAddrPort(remote)}
}

func pathCfg(t *testing.T, yaml string) Pathctl {
	t.Helper()
	c, err := ParseConfig([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return c.Resolve().Pathctl
}

// The manager starts a controller per matching connection as connections
// come, at most max_connections at once (the others wait and are counted),
// stops it when its connection closes, and follows a reload.
func TestPathManager(t *testing.T) {
	f := newFakePaths()
	var logs testenv.SyncBuffer
	m := newPathManager(f, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	state := t.TempDir()
	t.Cleanup(m.stopAll)
	cfg := pathCfg(t, "pathctl:\n  enabled: true\n  own_netns: false\n  namespaces: [lab]\n  max_connections: 2\n  ports: [5201]\n  state_dir: "+state+"\n")
	m.sync(ctx, cfg)

	f.report(t, "lab", ConnChange{Kind: Opened, Conn: conn(1, "10.0.0.1:40001", "10.1.0.1:5201")})
	f.report(t, "lab", ConnChange{Kind: Opened, Conn: conn(2, "10.0.0.1:40002", "10.1.0.1:80")}) // filtered
	f.report(t, "lab", ConnChange{Kind: Present, Conns: []PathConn{
		conn(1, "10.0.0.1:40001", "10.1.0.1:5201"), // known: taken once
		conn(2, "10.0.0.1:40002", "10.1.0.1:80"),
		conn(3, "10.0.0.1:40003", "10.1.0.1:5201"),
		conn(4, "10.0.0.1:40004", "10.1.0.1:5201"), // no slot: waits
	}})
	waitRunning(t, f, "lab/1", "lab/3")
	if o := f.ctrl(t, "lab", 1).o; o.Apply != pathctl.Auto || o.Config.Period != 500*time.Millisecond {
		t.Errorf("controller options %+v", o)
	}
	if n := metricValue(t, m, "mptcp_cc_pathctl_skipped_total"); n != 1 {
		t.Errorf("skipped %v, want 1", n)
	}
	if !strings.Contains(logs.String(), "max_connections reached") {
		t.Errorf("the bound is not logged:\n%s", logs.String())
	}

	// A decision is logged, counted and published.
	c1 := f.ctrl(t, "lab", 1)
	a := pathctl.SubflowID{Local: netip.MustParseAddrPort("10.0.0.1:40001"), Remote: netip.MustParseAddrPort("10.1.0.1:5201")}
	b := pathctl.SubflowID{Local: netip.MustParseAddrPort("10.0.1.1:40011"), Remote: netip.MustParseAddrPort("10.1.0.1:5201")}
	c1.o.Event(pathctl.Event{At: time.Now(), Token: 1, Apply: pathctl.PerEndpoint, Decision: pathctl.Decision{
		Mode: pathctl.BestPath, Best: a, Backup: []pathctl.SubflowID{b}, Switched: true, Trial: true, Reason: "trial of best-path"}})
	c1.o.Event(pathctl.Event{At: time.Now(), Token: 1, Apply: pathctl.PerEndpoint, Decision: pathctl.Decision{
		Mode: pathctl.BestPath, Best: a, Backup: []pathctl.SubflowID{b}, Trial: true, Reason: "trial settling"}, Err: fmt.Errorf("injected refusal")})
	line := `msg="path controller switched" netns=lab token=00000001 mode=trial to=best-path best=10.0.0.1:40001->10.1.0.1:5201 cause=trial reason="trial of best-path" apply=endpoint`
	if !strings.Contains(logs.String(), line) {
		t.Errorf("the switch is not logged as\n%s\n%s", line, logs.String())
	}
	if !strings.Contains(logs.String(), "injected refusal") {
		t.Errorf("the apply error is not logged:\n%s", logs.String())
	}
	wantMetrics := `
# HELP mptcp_cc_pathctl_apply_errors_total Requests to set or clear a backup flag that the kernel refused (not repeated while the decision stands).
# TYPE mptcp_cc_pathctl_apply_errors_total counter
mptcp_cc_pathctl_apply_errors_total{netns="lab"} 1
# HELP mptcp_cc_pathctl_connections MPTCP connections the daemon's path controller controls, by network namespace and mode (multipath, best-path, or trial while either is tried).
# TYPE mptcp_cc_pathctl_connections gauge
mptcp_cc_pathctl_connections{mode="best-path",netns="lab"} 0
mptcp_cc_pathctl_connections{mode="multipath",netns="lab"} 1
mptcp_cc_pathctl_connections{mode="trial",netns="lab"} 1
`
	if err := testutil.CollectAndCompare(m.col, strings.NewReader(wantMetrics), "mptcp_cc_pathctl_connections", "mptcp_cc_pathctl_apply_errors_total"); err != nil {
		t.Error(err)
	}
	if n := metricValue(t, m, "mptcp_cc_pathctl_switches_total", "netns=lab", "to=best-path", "cause=trial"); n != 1 {
		t.Errorf("switches{to=best-path,cause=trial} %v, want 1", n)
	}
	waitState(t, state, func(cs []pathctl.ConnState) bool {
		return len(cs) == 2 && cs[0].Token == "00000001" && cs[0].Label() == "trial" && cs[0].Best == a.String() && cs[0].Error == "injected refusal"
	})

	// Connection 1 closes: its controller stops, 4 takes the slot.
	f.report(t, "lab", ConnChange{Kind: Closed, Conn: PathConn{Token: 1}})
	if err := <-c1.done; err != context.Canceled {
		t.Errorf("controller of a closed connection returned %v", err)
	}
	waitRunning(t, f, "lab/3", "lab/4")
	// A controller that ends by itself (it saw the close first) frees its
	// slot too; 5 arrives and gets it.
	f.ctrl(t, "lab", 3).end <- nil
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		m.mu.Lock()
		active := m.active
		m.mu.Unlock()
		if active == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d controllers active after one of two ended", active)
		}
	}
	f.report(t, "lab", ConnChange{Kind: Opened, Conn: conn(5, "10.0.0.1:40005", "10.1.0.1:5201")})
	waitRunning(t, f, "lab/4", "lab/5")
	if n := metricValue(t, m, "mptcp_cc_pathctl_skipped_total"); n != 1 {
		t.Errorf("skipped %v, want still 1", n)
	}

	// Reload: another period restarts the controllers; the filter now
	// takes port 80 only: 4 and 5 stop, 2 (known, filtered) starts; the
	// daemon's own namespace is added.
	cfg2 := pathCfg(t, "pathctl:\n  enabled: true\n  namespaces: [lab]\n  max_connections: 2\n  period: 250ms\n  ports: [80]\n  state_dir: "+state+"\n")
	m.sync(ctx, cfg2)
	waitRunning(t, f, "lab/2")
	if o := f.ctrl(t, "lab", 2).o; o.Config.Period != 250*time.Millisecond {
		t.Errorf("after the reload, period %v", o.Config.Period)
	}
	for deadline := time.Now().Add(5 * time.Second); !slices.Equal(f.watched(), []string{"(own)", "lab"}); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("watched %v after the reload", f.watched())
		}
	}
	// Back to port 5201: 4 and 5 (still open, never reported closed) come back.
	m.sync(ctx, cfg)
	waitRunning(t, f, "lab/4", "lab/5")
	if f.ctrl(t, "lab", 4).o.Config.Period != 500*time.Millisecond {
		t.Error("the restarted controller does not have the reloaded period")
	}
	// A scan that no longer lists 2 forgets it.
	f.report(t, "lab", ConnChange{Kind: Present, Conns: []PathConn{conn(4, "10.0.0.1:40004", "10.1.0.1:5201"), conn(5, "10.0.0.1:40005", "10.1.0.1:5201")}})
	m.mu.Lock()
	_, known := m.conns[pathKey{"lab", 2}]
	m.mu.Unlock()
	if known {
		t.Error("a connection gone from the scan is still known")
	}

	// Off: every controller stops, nothing is watched, the state file goes.
	m.sync(ctx, Pathctl{}.resolve())
	waitRunning(t, f)
	m.stopAll()
	if w := f.watched(); len(w) != 0 {
		t.Errorf("still watched: %v", w)
	}
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		t.Errorf("state files left: %v", ents)
	}
}

// A namespace that cannot be watched is logged and tried again.
func TestPathManagerWatchRetry(t *testing.T) {
	saved := watchRetry
	watchRetry = 20 * time.Millisecond
	t.Cleanup(func() { watchRetry = saved })
	f := newFakePaths()
	f.watchErr["gone"] = fmt.Errorf("network namespace gone: no such file")
	var logs testenv.SyncBuffer
	m := newPathManager(f, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Cleanup(m.stopAll)
	m.sync(ctx, pathCfg(t, "pathctl:\n  enabled: true\n  own_netns: false\n  namespaces: [gone]\n  state_dir: "+t.TempDir()+"\n"))
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "cannot follow"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the failure is not logged:\n%s", logs.String())
		}
	}
	f.mu.Lock()
	delete(f.watchErr, "gone")
	f.mu.Unlock()
	f.report(t, "gone", ConnChange{Kind: Opened, Conn: conn(7, "10.0.0.1:1", "10.1.0.1:2")})
	waitRunning(t, f, "gone/7")
	m.stopAll()
	waitRunning(t, f)
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings for one namespace that failed repeatedly, want 1:\n%s", n, logs.String())
	}
}

// Run starts the controllers of its configuration, applies a reload, and
// stops every controller (which clears its flags) before it returns.
func TestRunPathctl(t *testing.T) {
	testenv.RequireRoot(t)
	f := newFakePaths()
	state := t.TempDir()
	cfg := schedConfig(t, OnExitKeep)
	cfg.Schedulers, cfg.NetnsSchedulers = nil, nil
	cfg.Pathctl = Pathctl{Enabled: true, OwnNetns: new(bool), Namespaces: []string{"lab"}, StateDir: state}
	next := cfg
	next.Pathctl.Namespaces = []string{"lab2"}
	reload := make(chan struct{}, 1)
	var logs testenv.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Policy: newFake(), Sched: newFakeSched(), Paths: f,
			Ready: func(a net.Addr) { ready <- a }, Reload: reload, ReadConfig: func() (Config, error) { return next, nil }})
	}()
	var addr net.Addr
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	f.report(t, "lab", ConnChange{Kind: Opened, Conn: conn(1, "10.0.0.1:1", "10.1.0.1:2")})
	waitRunning(t, f, "lab/1")
	body := metricsBody(t, addr)
	for _, want := range []string{`mptcp_cc_pathctl_connections{mode="multipath",netns="lab"} 1`, `mptcp_cc_pathctl_skipped_total 0`, `mptcp_cc_pathctl_switches_total{cause="stall",netns="lab",to="best-path"} 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(state, "*.json")); len(ents) != 1 {
		t.Errorf("state files %v, want the daemon's", ents)
	}

	reload <- struct{}{}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "configuration reloaded"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no reload:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), "reload: pathctl on in [lab] apply=auto") {
		t.Errorf("the reload does not log the change:\n%s", logs.String())
	}
	waitRunning(t, f)
	f.report(t, "lab2", ConnChange{Kind: Opened, Conn: conn(2, "10.0.0.1:1", "10.1.0.1:2")})
	waitRunning(t, f, "lab2/2")
	c := f.ctrl(t, "lab2", 2)

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Returned before Run did.
	select {
	case err := <-c.done:
		if err != context.Canceled {
			t.Errorf("controller returned %v", err)
		}
	default:
		t.Error("Run returned with a controller still running")
	}
	if ents, _ := filepath.Glob(filepath.Join(state, "*.json")); len(ents) != 0 {
		t.Errorf("state files left after Run: %v", ents)
	}
}

// metricValue is the value of the manager's series name with the labels
// given as name=value.
func metricValue(t *testing.T, m *pathManager, name string, labels ...string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.col)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, s := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range s.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for _, l := range labels {
				k, v, _ := strings.Cut(l, "=")
				if have[k] != v {
					continue next
				}
			}
			if c := s.GetCounter(); c != nil {
				return c.GetValue()
			}
			return s.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s %v", name, labels)
	return 0
}

// waitState waits until the published state's connections satisfy ok.
func waitState(t *testing.T, dir string, ok func([]pathctl.ConnState) bool) {
	t.Helper()
	var last []pathctl.State
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		st, err := pathctl.ReadStates(dir)
		if err != nil {
			t.Fatal(err)
		}
		last = st
		if len(st) == 1 && ok(st[0].Connections) {
			return
		}
	}
	t.Fatalf("published state %+v", last)
}

// A sock_diag scan (the fallback, and the catch-up after subscribing)
// finds a live connection by its token, named by its initial subflow.
func TestScanConns(t *testing.T) {
	n := testkernel.TwoPaths(t, 0)
	srv, c := testkernel.Transfer(t, n, xfer.Options{For: 3 * time.Second})
	token := testkernel.Token(t, n.Client, c.Local())
	sd, err := sockdiag.DialNS(n.Client)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	// Wait for the join, so there are two subflows to choose from.
	var conns []PathConn
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		socks, err := sd.TCP(unix.AF_INET, sockdiag.StateSet(sockdiag.Established))
		if err != nil {
			t.Fatal(err)
		}
		subflows := 0
		for _, s := range socks {
			if s.MPTCP && s.Token == token {
				subflows++
			}
		}
		if subflows == 2 || time.Now().After(deadline) {
			if conns, err = scanConns(sd); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	want := PathConn{Token: token, Local: c.Local(), Remote: srv.Addr()}
	if len(conns) != 1 || conns[0] != want {
		t.Errorf("scan found %+v, want [%+v]", conns, want)
	}
	if _, err := c.Wait(); err != nil {
		t.Fatal(err)
	}
}
