// SPDX-License-Identifier: Apache-2.0

package mptcpd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/mptcpd"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/events"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// requireMptcpd stops the test unless mptcpd and its plugins are installed;
// in CI (make deps installs them) their absence is a failure.
func requireMptcpd(t *testing.T) {
	t.Helper()
	_, err := mptcpd.Binary()
	if err == nil {
		_, err = mptcpd.PluginDir()
	}
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal(err)
	}
	t.Skip(err)
}

func TestArgvRejects(t *testing.T) {
	for _, c := range []struct {
		o    mptcpd.Options
		want string
	}{
		{mptcpd.Options{AddrFlags: []string{"subflows"}}, `address flag "subflows": choose from subflow, signal, backup, fullmesh`},
		{mptcpd.Options{AddrFlags: []string{"signal", "fullmesh"}}, "signal and fullmesh exclude each other"},
		{mptcpd.Options{NotifyFlags: []string{"all"}}, `notify flag "all"`},
		{mptcpd.Options{Plugins: []string{"addr_adv"}, PathManager: "sspi"}, `path manager "sspi" is not among the plugins loaded (addr_adv)`},
	} {
		_, err := mptcpd.Argv(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Argv(%+v): %v, want an error containing %q", c.o, err, c.want)
		}
	}
	requireMptcpd(t)
	if _, err := mptcpd.Argv(mptcpd.Options{Plugins: []string{"ndiffports"}}); err == nil || !strings.Contains(err.Error(), `no plugin "ndiffports"`) {
		t.Errorf("a plugin 0.12 does not ship: %v", err)
	}
	argv, err := mptcpd.Argv(mptcpd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(argv[1:], " ")
	for _, want := range []string{"--load-plugins=addr_adv", "--path-manager=addr_adv", "--addr-flags=subflow", "--notify-flags=existing,skip_link_local,skip_loopback", "--log=stderr"} {
		if !strings.Contains(got, want) {
			t.Errorf("default command line %q lacks %s", got, want)
		}
	}
}

// pmEnv is what both path manager tests share: a two-path network with no
// endpoints (mptcpd is to provide them), a coupled CC chosen for a test
// cgroup by a policy, and the daemon's event tracker on the client.
type pmEnv struct {
	net      *topo.Net
	ccRoot   string
	cc       string
	cgroup   string
	tracker  *events.Tracker
	xferBin  string
	srv      *xfer.Server
	daemonTo string // directory for mptcpd's log
}

func newPMEnv(t *testing.T) *pmEnv {
	t.Helper()
	testenv.RequireRoot(t)
	requireMptcpd(t)
	e := &pmEnv{ccRoot: testkernel.PinRoot(t), daemonTo: t.TempDir()}
	e.net = testkernel.Net(t, topo.Config{Prefix: "mpd", Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{{RateBits: 20e6}, {RateBits: 20e6}}})
	e.cc = testkernel.Load(t, e.ccRoot, "olia", cc.Params{})
	e.cgroup = testkernel.Cgroup(t, "")
	policyRoot := filepath.Join(filepath.Dir(e.ccRoot), "mptcp-cc-policy")
	if err := policy.Attach(policy.Rule{Cgroup: e.cgroup, CC: e.cc}, policyRoot); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := policy.Detach(e.cgroup, policyRoot); err != nil && !errors.Is(err, policy.ErrNoPolicy) {
			t.Errorf("detach: %v", err)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e.tracker = events.NewTracker(16)
	if _, err := e.tracker.Watch(ctx, e.net.Client); err != nil {
		t.Fatal(err)
	}
	e.xferBin = testenv.Binary(t, "../../cmd/mptcp-xfer")
	e.srv = testkernel.Serve(t, e.net)
	return e
}

// start runs mptcpd in the client's namespace and stops it at cleanup,
// showing its log when the test failed.
func (e *pmEnv) start(t *testing.T, o mptcpd.Options) *mptcpd.Daemon {
	t.Helper()
	o.NS, o.LogPath, o.Debug = e.net.Client, filepath.Join(e.daemonTo, "mptcpd.log"), true
	d, err := mptcpd.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("mptcpd's log (%s):\n%s", d.Command(), d.Log())
		}
	})
	return d
}

// transfer is an MPTCP transfer from the client's path 0, run by
// mptcp-xfer started inside the policy's cgroup.
type transfer struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

func (e *pmEnv) transfer(t *testing.T, d time.Duration) *transfer {
	t.Helper()
	x := &transfer{}
	x.cmd = exec.Command(e.xferBin, "client", "--ns", e.net.Client, "--mptcp", "--bind", topo.ClientAddr(0).String(),
		"--connect", e.srv.Addr().String(), "--time", d.String())
	x.cmd.Stdout, x.cmd.Stderr = &x.out, &x.out
	testkernel.IntoCgroup(t, x.cmd, e.cgroup)
	if err := x.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if x.cmd.ProcessState == nil {
			_ = x.cmd.Process.Kill()
			_ = x.cmd.Wait()
		}
	})
	return x
}

// xferReport is the part of mptcp-xfer's JSON the tests check.
type xferReport struct {
	Sent      int64 `json:"sent_bytes"`
	Delivered int64 `json:"delivered_bytes"`
	Intact    bool  `json:"intact"`
	FirstBad  int64 `json:"first_bad_offset"`
}

// check fails t unless the transfer carried data and every byte sent
// arrived. Wrong bytes with the right count are the host kernel's MPTCP
// fault (docs/kernel-faults.md section 1), logged and not failed: a path
// manager never touches payload.
func (r xferReport) check(t *testing.T) {
	t.Helper()
	t.Logf("transfer: %d bytes, intact %v", r.Delivered, r.Intact)
	if r.Delivered == 0 || r.Delivered != r.Sent {
		t.Errorf("transfer: %+v", r)
	}
	if !r.Intact {
		t.Logf("transfer: the kernel delivered wrong bytes from offset %d (known MPTCP fault)", r.FirstBad)
	}
}

func (x *transfer) result(t *testing.T) xferReport {
	t.Helper()
	if err := x.cmd.Wait(); err != nil {
		t.Fatalf("mptcp-xfer: %v: %s", err, x.out.String())
	}
	var r xferReport
	if err := json.Unmarshal(x.out.Bytes(), &r); err != nil {
		t.Fatalf("mptcp-xfer printed %q: %v", x.out.String(), err)
	}
	return r
}

// conn waits until the tracker knows the client's connection with at
// least want established subflows, and returns it as last seen.
func (e *pmEnv) conn(t *testing.T, want int, wait time.Duration) events.Conn {
	t.Helper()
	var last events.Conn
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		for _, c := range e.tracker.Snapshot().Open {
			if c.ServerSide || c.Local.Addr() != topo.ClientAddr(0) {
				continue
			}
			last = c
			n := 0
			for _, s := range c.Subflows {
				if !s.Established.IsZero() && s.Closed.IsZero() {
					n++
				}
			}
			if n >= want {
				return c
			}
		}
		if time.Now().After(deadline) {
			if last.Token == 0 {
				t.Fatal("the tracker saw no connection from the client")
			}
			return last
		}
	}
}

// checkSubflows checks that the BPF maps hold exactly the connection's
// subflows the tracker reports, all under the policy's CC, with the
// tracker's token and address ids.
func (e *pmEnv) checkSubflows(t *testing.T, c events.Conn) []stats.Subflow {
	t.Helper()
	var subs []stats.Subflow
	for _, s := range testkernel.Subflows(t, e.ccRoot, e.cc) {
		if s.Token == c.Token {
			subs = append(subs, s)
		}
	}
	if len(subs) != len(c.Subflows) {
		t.Fatalf("token %08x: %d subflows under %s in the maps, the tracker reports %d: %+v / %+v", c.Token, len(subs), e.cc, len(c.Subflows), subs, c.Subflows)
	}
	for _, s := range subs {
		ev, ok := c.Subflow(s.Local, s.Remote)
		if !ok {
			t.Errorf("subflow %v -> %v in the maps is unknown to the tracker", s.Local, s.Remote)
			continue
		}
		if s.LocalID != ev.LocalID || s.RemoteID != ev.RemoteID {
			t.Errorf("subflow %v: address ids %d/%d in the maps, %d/%d in the events", s.Local, s.LocalID, s.RemoteID, ev.LocalID, ev.RemoteID)
		}
	}
	return subs
}

// The in-kernel path manager, fed by mptcpd: addr_adv turns every local
// address into a subflow endpoint and the kernel opens the second subflow
// from it. The policy's CC runs both subflows; the maps and the events name
// them alike (the join by the endpoint id mptcpd chose).
func TestKernelPMWithAddrAdv(t *testing.T) {
	e := newPMEnv(t)
	d := e.start(t, mptcpd.Options{Plugins: []string{mptcpd.AddrAdv}, AddrFlags: []string{"subflow"}})
	eps, err := mptcpd.WaitEndpoints(e.net.Client, []netip.Addr{topo.ClientAddr(0), topo.ClientAddr(1)}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var joinID uint8
	for _, ep := range eps {
		if ep.Addr == topo.ClientAddr(1) {
			joinID = ep.ID
			if !strings.Contains(ep.Flags.String(), "subflow") {
				t.Errorf("endpoint %v: want the subflow flag mptcpd was given", ep)
			}
		}
	}

	x := e.transfer(t, 3*time.Second)
	c := e.conn(t, 2, 5*time.Second)
	if len(c.Subflows) != 2 {
		t.Fatalf("connection %08x has subflows %+v, want the initial one and a join from %v", c.Token, c.Subflows, topo.ClientAddr(1))
	}
	for _, s := range c.Subflows {
		switch s.Local.Addr() {
		case topo.ClientAddr(0):
			if s.LocalID != 0 {
				t.Errorf("initial subflow: local id %d, want 0", s.LocalID)
			}
		case topo.ClientAddr(1):
			if s.LocalID != joinID {
				t.Errorf("joined subflow: local id %d, want %d, the id of mptcpd's endpoint", s.LocalID, joinID)
			}
		default:
			t.Errorf("subflow from %v: not one of the client's paths", s.Local)
		}
	}
	time.Sleep(time.Second)
	for _, s := range e.checkSubflows(t, c) {
		t.Logf("token %08x subflow %d: %v ids %d/%d cc %s, %d bytes acked", s.Token, s.SubflowID, s.Local, s.LocalID, s.RemoteID, s.CC, s.BytesAcked)
		if s.BytesAcked == 0 {
			t.Errorf("subflow %v carried no data after 1 s", s.Local)
		}
	}
	if est, sub := c.Subflows[0].Established, c.Subflows[1].Established; !est.IsZero() && !sub.IsZero() {
		t.Logf("join established %v after the connection", sub.Sub(est).Round(time.Microsecond))
	}
	x.result(t).check(t)
	if err := d.Stop(); err != nil {
		t.Error(err)
	}
}

// The userspace path manager (net.mptcp.pm_type=1) with what mptcpd 0.12
// ships: sspi as the path manager, addr_adv loaded beside it. sspi hears
// of the connection (its log says so) but sends the kernel nothing: no
// subflow is created and no address announced; the endpoints addr_adv adds
// are the in-kernel path manager's, which this mode ignores. So the
// connection keeps its one subflow; that subflow still runs the policy's
// CC and is named alike by the maps and the events. If a later mptcpd opens
// subflows here, this test fails and docs/mptcpd.md must say so.
func TestUserspacePMShippedPluginsOpenNoSubflow(t *testing.T) {
	e := newPMEnv(t)
	if err := mptcpd.UserspacePM(e.net.Client); err != nil {
		t.Fatal(err)
	}
	d := e.start(t, mptcpd.Options{Plugins: []string{mptcpd.SSPI, mptcpd.AddrAdv}, PathManager: mptcpd.SSPI, AddrFlags: []string{"subflow"}})
	if _, err := mptcpd.WaitEndpoints(e.net.Client, []netip.Addr{topo.ClientAddr(1)}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	counters := []string{"MPTcpExtMPJoinSynTx", "MPTcpExtAddAddrTx"}
	before := map[string]uint64{}
	for _, n := range counters {
		before[n] = testkernel.MIBCounter(t, e.net.Client, n)
	}

	x := e.transfer(t, 3*time.Second)
	c := e.conn(t, 1, 5*time.Second)
	time.Sleep(2 * time.Second) // time enough for any join: the path's RTT is under a millisecond
	c, _ = e.tracker.Lookup(c.Token)
	if len(c.Subflows) != 1 {
		t.Fatalf("connection %08x has subflows %+v: mptcpd 0.12 now opens subflows under the userspace path manager; update docs/mptcpd.md", c.Token, c.Subflows)
	}
	if s := c.Subflows[0]; s.LocalID != 0 || s.RemoteID != 0 || s.Local.Addr() != topo.ClientAddr(0) {
		t.Errorf("the initial subflow: %+v, want ids 0/0 from %v", s, topo.ClientAddr(0))
	}
	subs := e.checkSubflows(t, c)
	t.Logf("token %08x: one subflow %v ids %d/%d cc %s, %d bytes acked", c.Token, subs[0].Local, subs[0].LocalID, subs[0].RemoteID, subs[0].CC, subs[0].BytesAcked)
	if subs[0].BytesAcked == 0 {
		t.Errorf("the subflow carried no data")
	}
	for _, n := range counters {
		if got := testkernel.MIBCounter(t, e.net.Client, n); got != before[n] {
			t.Errorf("%s went from %d to %d: something did act", n, before[n], got)
		}
	}
	if log := d.Log(); !strings.Contains(log, "sspi_connection_established is unimplemented") {
		t.Errorf("sspi did not log the connection's establishment; its log:\n%s", log)
	}
	x.result(t).check(t)
}
