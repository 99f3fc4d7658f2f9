// SPDX-License-Identifier: Apache-2.0

// Package testkernel is what the tests of the kernel side share, on top of
// internal/testenv: a private bpffs for pins, congestion controls loaded
// under unique names, emulated networks (lab/topo) and MPTCP transfers
// across them. Everything is removed at cleanup, even when the test fails.
package testkernel

import (
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// PinRoot mounts a private bpffs instance for the test and returns a pin
// root inside it. Unmounting at cleanup drops every pin left in it, so even
// a test that forgot to unload leaves nothing registered.
func PinRoot(t testing.TB) string {
	t.Helper()
	testenv.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "bpffs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		t.Fatalf("mounting a private bpffs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return filepath.Join(dir, "mptcp-cc")
}

// Load loads an algorithm under a unique name (so tests never collide with
// what a user loaded) and unloads it at cleanup. It returns the name.
func Load(t testing.TB, root, algo string, p cc.Params) string {
	t.Helper()
	a, err := cc.Lookup(algo)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.Unique("t_" + algo + "_")
	if err := cc.Load(a, cc.Options{Name: name, PinRoot: root, Params: p}); err != nil {
		t.Fatalf("loading %s: %v", algo, err)
	}
	t.Cleanup(func() {
		if err := cc.Unload(name, root); err != nil {
			t.Errorf("unloading %s: %v", name, err)
		}
	})
	return name
}

// UnloadAtCleanup unloads, at cleanup, those of names that are registered
// then: for congestion controls that something else (a daemon, a command)
// loads and should have unloaded.
func UnloadAtCleanup(t testing.TB, root string, names ...string) {
	t.Cleanup(func() {
		for _, n := range names {
			if cc.IsRegistered(n) {
				_ = cc.Unload(n, root)
			}
		}
	})
}

// Net builds a topology and removes it at cleanup.
func Net(t testing.TB, cfg topo.Config) *topo.Net {
	t.Helper()
	testenv.RequireRoot(t)
	n, err := topo.Build(cfg)
	if err != nil {
		t.Fatalf("building the network: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("removing the network: %v", err)
		}
	})
	return n
}

// TwoPaths is the network most tests use: two client paths, each through
// its own bottleneck of the given rate (0: unshaped), one MPTCP subflow on
// each.
func TwoPaths(t testing.TB, rateBits uint64) *topo.Net {
	t.Helper()
	return Net(t, topo.Config{
		Paths:       []int{0, 1},
		Bottlenecks: []topo.Shaping{{RateBits: rateBits}, {RateBits: rateBits}},
		Subflows:    true,
	})
}

// HurtingPaths builds two paths where aggregation hurts (seed 004) - a
// long, lossy, slow second path, and a server receive buffer of about the
// good path's BDP (buf <= RTT_max * T') - the path controller's test bed.
// subflows: the client's in-kernel path manager opens the second subflow
// (else the caller opens it, e.g. under the userspace path manager).
func HurtingPaths(t testing.TB, subflows bool) *topo.Net {
	t.Helper()
	n := Net(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: 10e6, Delay: 10 * time.Millisecond},
			{RateBits: 1e6, Delay: 150 * time.Millisecond, Loss: 0.02, Seed: 7},
		},
		Subflows: subflows,
	})
	if err := netns.Exec(n.Server, "sysctl", "-q", "-w", "net.ipv4.tcp_rmem=4096 65536 131072"); err != nil {
		t.Fatal(err)
	}
	return n
}

// Token waits (up to 3 s) for an MPTCP subflow from local in namespace ns
// and returns its connection's token.
func Token(t testing.TB, ns string, local netip.AddrPort) uint32 {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		socks, err := sockdiag.Dump(ns, 2, sockdiag.StateSet(sockdiag.Established))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range socks {
			if s.MPTCP && s.Local == local && s.Token != 0 {
				return s.Token
			}
		}
	}
	t.Fatalf("no MPTCP subflow from %v", local)
	return 0
}

// NoBackupEndpoint fails the test for every endpoint of the in-kernel path
// manager in ns that is flagged backup: what a path controller must not
// leave behind.
func NoBackupEndpoint(t testing.TB, ns string) {
	t.Helper()
	pm, err := mptcpnl.DialNS(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	eps, err := pm.Endpoints()
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		if ep.Flags&mptcpnl.FlagBackup != 0 {
			t.Errorf("endpoint %v left flagged backup", ep)
		}
	}
}

// Serve starts an MPTCP sink on the server's address in n (a port of the
// kernel's choice), closed at cleanup.
func Serve(t testing.TB, n *topo.Net) *xfer.Server {
	t.Helper()
	srv, err := xfer.Listen(n.Server, netip.AddrPortFrom(topo.ServerAddr, 0), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// client fills in what o leaves out: an MPTCP connection from the client's
// path 0 in n to srv.
func client(n *topo.Net, srv *xfer.Server, o xfer.Options) xfer.Options {
	if o.NS == "" {
		o.NS = n.Client
	}
	if !o.Local.IsValid() {
		o.Local = topo.ClientAddr(0)
	}
	if !o.Remote.IsValid() {
		o.Remote = srv.Addr()
	}
	o.MPTCP = true
	return o
}

// Start starts a transfer to srv (Options as for xfer.Start; NS, Local and
// Remote default to n's client, its path 0 and srv; always MPTCP).
func Start(t testing.TB, n *topo.Net, srv *xfer.Server, o xfer.Options) *xfer.Client {
	t.Helper()
	c, err := xfer.Start(client(n, srv, o))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Transfer is Serve and Start together: the sink and a transfer to it,
// already running.
func Transfer(t testing.TB, n *topo.Net, o xfer.Options) (*xfer.Server, *xfer.Client) {
	t.Helper()
	srv := Serve(t, n)
	return srv, Start(t, n, srv, o)
}

// Run is Start that waits for the transfer's result.
func Run(n *topo.Net, srv *xfer.Server, o xfer.Options) (xfer.Result, error) {
	return xfer.Run(client(n, srv, o))
}

// Subflows returns the live subflows of the congestion control loaded as
// name under root.
func Subflows(t testing.TB, root, name string) []stats.Subflow {
	t.Helper()
	all, err := stats.ReadAll(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []stats.Subflow
	for _, s := range all {
		if s.CC == name {
			out = append(out, s)
		}
	}
	return out
}

// Cgroup creates a fresh cgroup v2 under parent ("" for the v2 mount) and
// removes it at cleanup, moving out whatever process is left in it.
func Cgroup(t testing.TB, parent string) string {
	t.Helper()
	if parent == "" {
		mnt, err := policy.CgroupMount()
		if err != nil {
			t.Fatal(err)
		}
		parent = mnt
	}
	dir := filepath.Join(parent, testenv.Unique("mptcp-cc-test-"))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("creating cgroup: %v", err)
	}
	t.Cleanup(func() { removeCgroup(t, dir) })
	return dir
}

func removeCgroup(t testing.TB, dir string) {
	parent := filepath.Dir(dir)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// Children first (nested test cgroups are removed by their own
		// cleanup, which runs earlier; this is a safety net).
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				removeCgroup(t, filepath.Join(dir, e.Name()))
			}
		}
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return
		}
		if procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")); len(procs) > 0 {
			for _, pid := range strings.Fields(string(procs)) {
				_ = os.WriteFile(filepath.Join(parent, "cgroup.procs"), []byte(pid), 0)
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("removing cgroup %s: %v", dir, err)
			return
		}
	}
}

// IntoCgroup makes cmd start straight inside the cgroup dir (clone3 with
// CLONE_INTO_CGROUP), so every socket it opens is the cgroup's from the
// first: sock_ops programs act by the cgroup of the socket's creator.
func IntoCgroup(t testing.TB, cmd *exec.Cmd, dir string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("opening cgroup %s: %v", dir, err)
	}
	// The descriptor must outlive cmd.Start; the test's end is late enough.
	t.Cleanup(func() { unix.Close(fd) })
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
}

// MIBCounter reads one of the kernel's SNMP/MPTCP counters in a namespace.
func MIBCounter(t testing.TB, ns, name string) uint64 {
	t.Helper()
	out, err := netns.Output(ns, "nstat", "-asz", name)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == name {
			v, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("counter %s not found in %q", name, out)
	return 0
}

// Anomalies reads the kernel's MPTCP anomaly counters
// (kernel.MPTCPAnomalies) in each namespace, keyed "namespace counter".
func Anomalies(t testing.TB, nss ...string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, ns := range nss {
		m, err := kernel.MPTCPMIB(ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kernel.MPTCPAnomalies {
			out[ns+" "+k] = m[k]
		}
	}
	return out
}

// AnomaliesSince is what moved in the namespaces since before (an
// Anomalies reading of the same namespaces): the evidence that a transfer
// which broke met the kernel's MPTCP fault rather than ours.
func AnomaliesSince(t testing.TB, before map[string]uint64, nss ...string) map[string]uint64 {
	t.Helper()
	return kernel.MIBDelta(before, Anomalies(t, nss...))
}

// Receipt fails t unless every byte the client sent arrived (res.Sent of
// them, and want too if it is not 0). Bytes that arrived wrong are logged,
// not failed: Linux 6.18's MPTCP delivers wrong bytes now and then whatever
// the CC (README, "Kernel issues found"), and a test of ours is not the
// place to fail on the kernel's fault; pkg/cc's churn test bounds its rate.
func Receipt(t testing.TB, what string, res xfer.Result, want int64) {
	t.Helper()
	if res.Delivered != res.Sent || (want != 0 && res.Delivered != want) {
		t.Fatalf("%s: sent %d, delivered %d, want %d", what, res.Sent, res.Delivered, max(want, res.Sent))
	}
	if res.FirstBad >= 0 {
		t.Logf("%s: the kernel delivered wrong bytes from offset %d (known 6.18 MPTCP fault)", what, res.FirstBad)
	}
}
