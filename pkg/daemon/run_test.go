// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/servetest"
	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

// fakePolicy records what the daemon asks of pkg/policy.
type fakePolicy struct {
	mu        sync.Mutex
	rules     map[string][]policy.RuleInfo // by cgroup
	nextID    uint32
	calls     []string
	failOn    string            // Attach of this CC fails
	errors    map[string]uint64 // policy program errors by cgroup
	algosSeen []bool            // whether the rule's CC was registered at Attach
}

func newFake() *fakePolicy { return &fakePolicy{rules: map[string][]policy.RuleInfo{}} }

func (f *fakePolicy) Attach(r policy.Rule, root string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("attach %s %s %v %d %v", r.Cgroup, r.CC, r.Dst, r.DstPort, r.PlainTCP))
	f.algosSeen = append(f.algosSeen, cc.IsRegistered(r.CC))
	if r.CC == f.failOn {
		return errors.New("injected failure")
	}
	rs := f.rules[r.Cgroup]
	for i := range rs {
		if rs[i].Dst == r.Dst && rs[i].DstPort == r.DstPort {
			rs[i].CC, rs[i].PlainTCP = r.CC, r.PlainTCP
			return nil
		}
	}
	f.nextID++
	f.rules[r.Cgroup] = append(rs, policy.RuleInfo{ID: f.nextID, CC: r.CC, Dst: r.Dst, DstPort: r.DstPort, PlainTCP: r.PlainTCP})
	return nil
}

func (f *fakePolicy) DetachRule(cgroup string, id uint32, root string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("detach %s %d", cgroup, id))
	rs := f.rules[cgroup]
	for i := range rs {
		if rs[i].ID == id {
			f.rules[cgroup] = append(rs[:i], rs[i+1:]...)
			if len(f.rules[cgroup]) == 0 {
				delete(f.rules, cgroup)
			}
			return nil
		}
	}
	return policy.ErrNoSuchRule
}

func (f *fakePolicy) List(root string) ([]policy.Attachment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []policy.Attachment
	for cg, rs := range f.rules {
		out = append(out, policy.Attachment{Cgroup: cg, Attached: true, Rules: append([]policy.RuleInfo(nil), rs...),
			Counters: policy.Counters{Errors: f.errors[cg]}})
	}
	return out, nil
}

func (f *fakePolicy) ResolveCgroup(dir string) (string, error) {
	if strings.Contains(dir, "missing") {
		return "", fmt.Errorf("cgroup %s does not exist", dir)
	}
	if !strings.HasPrefix(dir, "/") {
		dir = "/cg/" + dir
	}
	return dir, nil
}

func (f *fakePolicy) log() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, "\n")
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// runAsync starts Run and waits until it is ready (or failed).
func runAsync(t *testing.T, cfg Config, pe PolicyEngine) (stop func() error, err error) {
	t.Helper()
	stop, _, err = runAsyncAddr(t, cfg, pe)
	return stop, err
}

// metricsBody scrapes a running daemon's metrics.
func metricsBody(t *testing.T, addr net.Addr) string {
	t.Helper()
	return servetest.Get(t, "http://"+addr.String()+"/metrics")
}

// runAsyncAddr is runAsync that also returns the metrics address.
func runAsyncAddr(t *testing.T, cfg Config, pe PolicyEngine) (stop func() error, addr net.Addr, err error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{Logger: quietLog(), Policy: pe, Ready: func(a net.Addr) { ready <- a }})
	}()
	select {
	case a := <-ready:
		return func() error { cancel(); return <-done }, a, nil
	case err := <-done:
		cancel()
		return nil, nil, err
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("Run neither ready nor failed in 30 s")
	}
	return nil, nil, nil
}

func testConfig(root, name string, onExit OnExit) Config {
	zero := 0
	off := false
	return Config{
		BPFFS: root, OnExit: onExit,
		Algorithms: []Algorithm{{Algo: "olia", Name: name}},
		Policies: []Policy{
			{Cgroup: "batch", Algo: "olia"},
			{Cgroup: "/cg/web", CC: "cubic", Dst: "192.0.2.0/24", DstPort: 443, TCP: true},
		},
		Metrics: Metrics{ListenAddress: "127.0.0.1:0", MaxSubflows: &zero},
		Events:  Events{Enabled: &off},
	}
}

// Policies are attached after the algorithms are loaded, adopted on a
// restart, and on_exit remove detaches exactly the configured rules.
func TestRunPolicies(t *testing.T) {
	root := testkernel.PinRoot(t)
	name := testenv.Unique("t_run_")
	t.Cleanup(func() { _ = cc.Unload(name, root) })
	fp := newFake()
	// A rule of the same cgroup the configuration does not name stays.
	fp.rules["/cg/web"] = []policy.RuleInfo{{ID: 100, CC: "reno", DstPort: 22}}

	stop, err := runAsync(t, testConfig(root, name, OnExitKeep), fp)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("attach /cg/batch %s invalid Prefix 0 false\nattach /cg/web cubic 192.0.2.0/24 443 true", name)
	if fp.log() != want {
		t.Fatalf("calls:\n%s\nwant:\n%s", fp.log(), want)
	}
	if !fp.algosSeen[0] {
		t.Error("the policy was attached before its algorithm was loaded")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !cc.IsRegistered(name) || len(fp.rules["/cg/batch"]) != 1 {
		t.Fatal("on_exit keep removed something")
	}

	// Restart: everything adopted, no call.
	fp.calls = nil
	stop, err = runAsync(t, testConfig(root, name, OnExitRemove), fp)
	if err != nil {
		t.Fatal(err)
	}
	if fp.log() != "" {
		t.Fatalf("a restart re-attached:\n%s", fp.log())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if cc.IsRegistered(name) {
		t.Error("on_exit remove left the algorithm")
	}
	if len(fp.rules["/cg/batch"]) != 0 || len(fp.rules["/cg/web"]) != 1 || fp.rules["/cg/web"][0].ID != 100 {
		t.Errorf("after on_exit remove: %+v (want only the foreign rule 100)", fp.rules)
	}
}

// A failure while starting undoes what this run did and nothing else.
func TestRunRollback(t *testing.T) {
	root := testkernel.PinRoot(t)
	name := testenv.Unique("t_run_")
	t.Cleanup(func() { _ = cc.Unload(name, root) })

	// Attach of the second rule fails: the first rule is detached, the
	// algorithm this run loaded is unloaded.
	fp := newFake()
	fp.failOn = "cubic"
	_, err := runAsync(t, testConfig(root, name, OnExitKeep), fp)
	if err == nil || !strings.Contains(err.Error(), "policies[1]: attaching to cgroup /cg/web: injected failure") {
		t.Fatalf("err = %v", err)
	}
	if cc.IsRegistered(name) {
		t.Error("the algorithm loaded before the failure is still registered")
	}
	if len(fp.rules) != 0 {
		t.Errorf("rules left: %+v", fp.rules)
	}

	// Missing cgroup: refused before anything is loaded.
	fp = newFake()
	cfg := testConfig(root, name, OnExitKeep)
	cfg.Policies[0].Cgroup = "missing/one"
	_, err = runAsync(t, cfg, fp)
	if err == nil || !strings.Contains(err.Error(), "policies[0].cgroup: cgroup missing/one does not exist") {
		t.Fatalf("err = %v", err)
	}
	if cc.IsRegistered(name) || fp.log() != "" {
		t.Errorf("something was done before the preflight failed: registered=%v calls=%q", cc.IsRegistered(name), fp.log())
	}

	// A policy naming a CC that is neither configured nor registered.
	cfg = testConfig(root, name, OnExitKeep)
	cfg.Policies[1].CC = "nosuchcc"
	_, err = runAsync(t, cfg, newFake())
	if err == nil || !strings.Contains(err.Error(), `policies[1].cc: "nosuchcc" is neither in the algorithms list nor a registered congestion control`) {
		t.Fatalf("err = %v", err)
	}

	// A delayed-ACK cap the kernel would refuse: refused before anything
	// is loaded.
	cfg = testConfig(root, name, OnExitKeep)
	cfg.Policies[1].DelackMax = time.Second
	fp = newFake()
	_, err = runAsync(t, cfg, fp)
	if err == nil || !strings.Contains(err.Error(), "policies[1].delack_max: invalid rule: delayed-ACK cap 1s is outside what the kernel takes") {
		t.Fatalf("err = %v", err)
	}
	if cc.IsRegistered(name) || fp.log() != "" {
		t.Errorf("something was done before the preflight failed: registered=%v calls=%q", cc.IsRegistered(name), fp.log())
	}

	// An adopted algorithm survives the rollback of a failed start.
	a, _ := cc.Lookup("olia")
	if err := cc.Load(a, cc.Options{Name: name, PinRoot: root, Params: cc.Params{RSFTarget: cc.DefaultRSFTarget}}); err != nil {
		t.Fatal(err)
	}
	fp = newFake()
	fp.failOn = "cubic"
	if _, err := runAsync(t, testConfig(root, name, OnExitKeep), fp); err == nil {
		t.Fatal("no error")
	}
	if !cc.IsRegistered(name) {
		t.Error("the rollback unloaded an algorithm it had adopted")
	}

	// Another algorithm under the configured name: a clear error.
	cfg = testConfig(root, name, OnExitKeep)
	cfg.Algorithms[0].Algo = "lia"
	cfg.Policies = nil
	_, err = runAsync(t, cfg, newFake())
	if err == nil || !strings.Contains(err.Error(), "is already loaded as olia, the configuration wants lia") {
		t.Fatalf("err = %v", err)
	}
}

// The policy programs' error counters are exported per cgroup, for the
// policies the daemon attached and for those it did not.
func TestRunPolicyErrors(t *testing.T) {
	root := testkernel.PinRoot(t)
	name := testenv.Unique("t_run_")
	t.Cleanup(func() { _ = cc.Unload(name, root) })
	fp := newFake()
	fp.rules["/cg/other"] = []policy.RuleInfo{{ID: 100, CC: "reno"}}
	fp.errors = map[string]uint64{"/cg/batch": 3, "/cg/other": 1}

	stop, addr, err := runAsyncAddr(t, testConfig(root, name, OnExitRemove), fp)
	if err != nil {
		t.Fatal(err)
	}
	body := metricsBody(t, addr)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`mptcp_cc_policy_errors_total{cgroup="/cg/batch"} 3`,
		`mptcp_cc_policy_errors_total{cgroup="/cg/web"} 0`,
		`mptcp_cc_policy_errors_total{cgroup="/cg/other"} 1`,
		"# TYPE mptcp_cc_policy_errors_total counter",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
}
