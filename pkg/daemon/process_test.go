// SPDX-License-Identifier: Apache-2.0

package daemon_test

import (
	"errors"
	"fmt"
	"net"
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
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// mptcpCC builds the real binary once per test run.
func mptcpCC(t *testing.T) string { return testenv.Binary(t, "../../cmd/mptcp-cc") }

func startDaemon(t *testing.T, config string, args ...string) *servetest.Proc {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return servetest.Start(t, mptcpCC(t), file, args...)
}

// registeredCount counts a name in the kernel's list (to see duplicates).
func registeredCount(t *testing.T, name string) int {
	t.Helper()
	names, err := cc.Registered()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range names {
		if x == name {
			n++
		}
	}
	return n
}

// serve with on_exit remove: metrics respond; SIGTERM unloads what the
// configuration named and leaves no pins.
func TestServeOnExitRemove(t *testing.T) {
	root := testkernel.PinRoot(t)
	name := testenv.Unique("t_srv_")
	testkernel.UnloadAtCleanup(t, root, name)
	d := startDaemon(t, fmt.Sprintf(`
bpffs: %s
on_exit: remove
algorithms:
  - {algo: lia, name: %s, lisa: true}
metrics: {listen_address: "127.0.0.1:0"}
`, root, name))
	url := d.Ready()
	body := servetest.Get(t, url)
	for _, want := range []string{
		fmt.Sprintf(`mptcp_cc_algorithm_info{cc="%s",algo="lia",lisa="true",trace="false"} 1`, name),
		fmt.Sprintf(`mptcp_cc_algorithm_subflows{cc="%s",algo="lia"} 0`, name),
		"mptcp_cc_build_info{", "process_resident_memory_bytes", "mptcp_cc_pm_events_total", "mptcp_cc_subflow_series_limit 4096",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !cc.IsRegistered(name) {
		t.Fatalf("%s not registered while the daemon runs", name)
	}
	if code := d.Stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, d.Logs())
	}
	if cc.IsRegistered(name) {
		t.Errorf("%s still registered after SIGTERM with on_exit remove", name)
	}
	if l, err := cc.List(root); err != nil || len(l) != 0 {
		t.Errorf("pins left: %+v %v", l, err)
	}
	if !strings.Contains(d.Logs(), "unloaded") {
		t.Errorf("no unload logged:\n%s", d.Logs())
	}
}

// SIGKILL with 100 live connections: the pins keep the CC, every transfer
// completes intact; a restart adopts the pins (no error, no duplicate),
// counts the 100 connections,
// updates changed parameters in place, follows the client namespace's
// events; on_exit keep leaves the CC registered.
func TestServeKillAdoptKeep(t *testing.T) {
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 20e6)
	name := testenv.Unique("t_srv_")
	testkernel.UnloadAtCleanup(t, root, name)
	config := func(lisa bool) string {
		return fmt.Sprintf(`
bpffs: %s
on_exit: keep
algorithms:
  - {algo: olia, name: %s, lisa: %v}
metrics: {listen_address: "127.0.0.1:0"}
events: {namespaces: [%s]}
`, root, name, lisa, n.Client)
	}

	d := startDaemon(t, config(false))
	d.Ready()
	if !strings.Contains(d.Logs(), "loaded") {
		t.Fatalf("first start did not load:\n%s", d.Logs())
	}

	// The transfers run until they have been counted (Stop), however long
	// the kill and restart take on a loaded machine; runFor only bounds a
	// test that failed before stopping them.
	const conns, runFor = 100, 2 * time.Minute
	srv := testkernel.Serve(t, n)
	before := testkernel.Anomalies(t, n.Client, n.Server)
	var clients []*xfer.Client
	for range conns {
		clients = append(clients, testkernel.Start(t, n, srv, xfer.Options{CC: name, For: runFor}))
	}
	time.Sleep(time.Second)
	if code := d.Stop(syscall.SIGKILL); code != -1 {
		t.Fatalf("SIGKILL: exit %d", code)
	}
	if !cc.IsRegistered(name) {
		t.Fatal("SIGKILL unregistered the CC")
	}

	// Restart while the transfer runs: adopted, same parameters.
	d = startDaemon(t, config(false))
	url := d.Ready()
	if !strings.Contains(d.Logs(), "adopted") || strings.Contains(d.Logs(), "level=ERROR") {
		t.Fatalf("restart did not adopt cleanly:\n%s", d.Logs())
	}
	if got := registeredCount(t, name); got != 1 {
		t.Fatalf("%s listed %d times after the restart", name, got)
	}
	if l, err := cc.List(root); err != nil || len(l) != 1 {
		t.Fatalf("after the restart: %+v %v", l, err)
	}
	body := servetest.Get(t, url)
	for _, c := range clients {
		c.Stop()
	}
	if want := fmt.Sprintf(`mptcp_cc_algorithm_connections{cc="%s",algo="olia"} %d`, name, conns); !strings.Contains(body, want) {
		t.Errorf("/metrics after the restart: want %s, have:\n%s", want, servetest.Lines(body, "algorithm_connections"))
	}
	// A CC and the daemon cannot drop or change a byte: the kernel's MPTCP
	// can (docs/kernel-faults.md section 1; once in 100 transfers here,
	// 296 bytes short of 65,456 sent, near the offset where its wrong
	// bytes start; once a transfer that never completed, in a CI run).
	// Such transfers are counted, not failed, up to the bound the kernel's
	// worst measured rate explains (testkernel.KernelFaultMax); one that
	// stalls counts only if the kernel's MPTCP anomaly counters moved
	// meanwhile (a mapping it rejected, a subflow it reset).
	damagedMax := testkernel.KernelFaultMax(conns)
	damaged := 0
	for i, c := range clients {
		res, err := c.Wait()
		if err != nil {
			moved := testkernel.AnomaliesSince(t, before, n.Client, n.Server)
			if !errors.Is(err, os.ErrDeadlineExceeded) || len(moved) == 0 {
				t.Fatalf("transfer %d across the kill: %v (MPTCP anomaly counters moved: %v)", i, err, moved)
			}
			damaged++
			t.Logf("transfer %d across the kill never completed (%v) while the kernel's MPTCP counted %v: the kernel's fault", i, err, moved)
			continue
		}
		if res.Sent == 0 || res.CC != name {
			t.Fatalf("transfer %d across the kill: sent %d, ran %q", i, res.Sent, res.CC)
		}
		if res.Delivered != res.Sent || !res.Intact {
			damaged++
			t.Logf("transfer %d across the kill: sent %d, delivered %d, first wrong byte at %d: the kernel's MPTCP lost or changed data", i, res.Sent, res.Delivered, res.FirstBad)
		}
	}
	if damaged > damagedMax {
		t.Fatalf("%d of %d transfers across the kill arrived damaged, more than the kernel's fault explains (%d)", damaged, conns, damagedMax)
	}
	if !strings.Contains(body, fmt.Sprintf(`mptcp_cc_algorithm_info{cc="%s",algo="olia"`, name)) {
		t.Errorf("/metrics after the restart lacks the algorithm")
	}

	// Events of the client namespace: a new connection is counted.
	if _, err := testkernel.Run(n, srv, xfer.Options{CC: name, Bytes: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`mptcp_cc_pm_events_total{netns="%s",type="CREATED"}`, n.Client)
	for deadline := time.Now().Add(3 * time.Second); !strings.Contains(servetest.Get(t, url), want); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %s", want)
		}
	}

	// SIGTERM with keep: still registered.
	if code := d.Stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, d.Logs())
	}
	if !cc.IsRegistered(name) {
		t.Fatal("on_exit keep unregistered the CC")
	}

	// Restart with other parameters: updated in place, no reload.
	d = startDaemon(t, config(true))
	d.Ready()
	if !strings.Contains(d.Logs(), "parameters updated") {
		t.Errorf("changed parameters not reported:\n%s", d.Logs())
	}
	l, err := cc.List(root)
	if err != nil || len(l) != 1 || !l[0].Params.LISA {
		t.Errorf("parameters after the update: %+v %v", l, err)
	}
	if code := d.Stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	if err := cc.Unload(name, root); err != nil {
		t.Fatal(err)
	}
}

// A real per-cgroup policy through pkg/policy: attached at start (the
// algorithm loaded first), detached at exit with on_exit remove.
func TestServePolicy(t *testing.T) {
	root := testkernel.PinRoot(t)
	proot := root + "-policy"
	cg := testCgroup(t, proot)
	name := testenv.Unique("t_srv_")
	testkernel.UnloadAtCleanup(t, root, name)

	d := startDaemon(t, fmt.Sprintf(`
bpffs: %s
on_exit: remove
algorithms: [{algo: balia, name: %s}]
policies:
  - {cgroup: %s, algo: balia}
  - {cgroup: %s, cc: cubic, dst: 192.0.2.0/24, dst_port: 443, tcp: true}
metrics: {listen_address: "127.0.0.1:0"}
events: {enabled: false}
`, root, name, filepath.Base(cg), cg))
	url := d.Ready()
	atts, err := policy.List(proot)
	if err != nil || len(atts) != 1 || atts[0].Cgroup != cg || len(atts[0].Rules) != 2 {
		t.Fatalf("policies while serving: %+v %v\n%s", atts, err, d.Logs())
	}
	body := servetest.Get(t, url)
	if !strings.Contains(body, fmt.Sprintf(`mptcp_cc_policy_rule_info{cc="%s",cgroup="%s",dst="any",dst_port="0",tcp="false"} 1`, name, cg)) {
		t.Errorf("/metrics lacks the policy rule:\n%s", servetest.Lines(body, "policy"))
	}
	if !strings.Contains(body, fmt.Sprintf(`mptcp_cc_policy_errors_total{cgroup="%s"} 0`, cg)) {
		t.Errorf("/metrics lacks the policy's error counter:\n%s", servetest.Lines(body, "policy"))
	}
	if code := d.Stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, d.Logs())
	}
	if atts, err := policy.List(proot); err != nil || len(atts) != 0 {
		t.Errorf("policies after on_exit remove: %+v %v", atts, err)
	}
	if cc.IsRegistered(name) {
		t.Errorf("%s registered after on_exit remove", name)
	}
}

// testCgroup creates a cgroup v2 directory for the test; at cleanup its
// policy under proot is detached and the directory removed.
func testCgroup(t *testing.T, proot string) string {
	t.Helper()
	mnt, err := policy.CgroupMount()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no cgroup v2 hierarchy: %v", err)
		}
		t.Skipf("no cgroup v2 hierarchy: %v", err)
	}
	cg := filepath.Join(mnt, testenv.Unique("mptcp-cc-test-"))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(cg) })
	t.Cleanup(func() { _ = policy.Detach(cg, proot) })
	return cg
}

// Bad input: a clear message, a non-zero exit, nothing registered or
// attached.
func TestServeBadInput(t *testing.T) {
	root := testkernel.PinRoot(t)
	first := testenv.Unique("t_srv_")
	testkernel.UnloadAtCleanup(t, root, first)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	before, _ := cc.Registered()

	cases := []struct {
		name   string
		config string
		args   []string
		want   []string
	}{
		{"unknown algorithm", "algorithms:\n  - algo: cubic2\n", nil,
			[]string{"config.yaml:3: algorithms[0].algo: unknown algorithm \"cubic2\": choose one of balia, lia, olia, rsf"}},
		{"malformed YAML", "algorithms: [\n  {algo: olia\n", nil, []string{"config.yaml:", "did not find expected"}},
		{"missing cgroup", fmt.Sprintf("algorithms: [{algo: lia, name: %s}]\npolicies:\n  - {cgroup: /sys/fs/cgroup/unified/no-such-%s, algo: lia}\nmetrics: {listen_address: \"127.0.0.1:0\"}\n", first, testenv.Suffix()), nil,
			[]string{"policies[0].cgroup:", "does not exist"}},
		{"non-loopback address", "metrics: {listen_address: \"0.0.0.0:9464\"}\n", nil,
			[]string{"metrics.listen_address:", "not a loopback address", "--web.allow-remote"}},
		{"non-loopback flag", "", []string{"--web.listen-address", ":9464"},
			[]string{"not a loopback address", "--web.allow-remote"}},
		{"port in use", fmt.Sprintf("algorithms: [{algo: lia, name: %s}]\nmetrics: {listen_address: %q}\n", first, busy.Addr().String()), nil,
			[]string{"address already in use"}},
		{"name taken by the kernel (rollback)", fmt.Sprintf("algorithms:\n  - {algo: lia, name: %s}\n  - {algo: olia, name: reno}\nmetrics: {listen_address: \"127.0.0.1:0\"}\n", first), nil,
			[]string{"algorithms[1]: loading olia as reno", "already registered"}},
		{"bad on-exit flag", "", []string{"--on-exit", "sometimes"}, []string{`--on-exit "sometimes": want keep or remove`}},
		{"namespace scheduler nobody loads", "netns_schedulers: [{scheduler: t_nosuch}]\nmetrics: {listen_address: \"127.0.0.1:0\"}\n", nil,
			[]string{`netns_schedulers[0].scheduler: "t_nosuch" is neither in the schedulers list nor registered`}},
	}
	if !kernel.Probe().SchedStructOps {
		// This machine: a scheduler cannot be loaded; the algorithm loaded
		// before it is unloaded again, nothing stays pinned.
		cases = append(cases, struct {
			name   string
			config string
			args   []string
			want   []string
		}{"scheduler without the hook (rollback)", fmt.Sprintf("algorithms: [{algo: lia, name: %s}]\nschedulers: [{algo: minrtt}]\nnetns_schedulers: [{scheduler: minrtt}]\nmetrics: {listen_address: \"127.0.0.1:0\"}\n", first), nil,
			[]string{"schedulers[0]: loading minrtt as minrtt: " + sched.ErrNoHook.Error()}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := startDaemon(t, "bpffs: "+root+"\n"+c.config, c.args...)
			code, out := d.Wait()
			if code == 0 {
				t.Fatalf("exit 0:\n%s", out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if l, err := cc.List(root); err != nil || len(l) != 0 {
				t.Errorf("left loaded: %+v %v", l, err)
			}
			if cc.IsRegistered(first) {
				t.Errorf("%s left registered", first)
			}
			if pins := testkernel.Pins(t, filepath.Dir(root)); len(pins) != 0 {
				t.Errorf("left pins: %v", pins)
			}
		})
	}
	after, _ := cc.Registered()
	if strings.Join(before, " ") != strings.Join(after, " ") {
		t.Errorf("registered congestion controls changed: %v -> %v", before, after)
	}

	// --config.check validates and exits; it touches nothing even for a
	// valid file naming algorithms.
	file := filepath.Join(t.TempDir(), "ok.yaml")
	_ = os.WriteFile(file, []byte(fmt.Sprintf("bpffs: %s\nalgorithms: [{algo: lia, name: %s}]\n", root, first)), 0o600)
	out, err := exec.Command(mptcpCC(t), "serve", "--config.check", "--config", file).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "valid") || cc.IsRegistered(first) {
		t.Errorf("--config.check: %v %s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(bad, []byte("algorithms:\n  - algo: lia\n    lisaa: true\n"), 0o600)
	cmd := exec.Command(mptcpCC(t), "serve", "--config.check", "--config", bad)
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "bad.yaml:3: algorithms[0].lisaa: unknown field") {
		t.Errorf("--config.check of a bad file: exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}

	// Not root: refused before anything is touched, with how to run it.
	if _, err := exec.LookPath("setpriv"); err == nil {
		file := filepath.Join(os.TempDir(), testenv.Unique("mptcp-cc-nonroot-")+".yaml")
		_ = os.WriteFile(file, []byte(fmt.Sprintf("bpffs: %s\nalgorithms: [{algo: lia, name: %s}]\nmetrics: {listen_address: \"127.0.0.1:0\"}\n", root, first)), 0o644)
		defer os.Remove(file)
		cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", mptcpCC(t), "serve", "--config", file)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), "needs root") {
			t.Errorf("unprivileged serve: exit %d: %s", cmd.ProcessState.ExitCode(), out)
		}
		if cc.IsRegistered(first) {
			t.Errorf("an unprivileged serve registered %s", first)
		}
	} else {
		t.Log("setpriv not found: the unprivileged case is only unit-tested (TestNotPrivileged)")
	}
}
