// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// resolved validates, resolves and resolves the policies of a configuration
// the way a reload does, with the fake engine's cgroups (relative ones are
// under /cg).
func resolved(t *testing.T, yaml string) (Config, []resolvedPolicy) {
	t.Helper()
	cfg, err := ParseConfig([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Resolve()
	var pols []resolvedPolicy
	fp := newFake()
	for i, p := range cfg.Policies {
		abs, err := fp.ResolveCgroup(p.Cgroup)
		if err != nil {
			t.Fatal(err)
		}
		pols = append(pols, resolvedPolicy{index: i, cfg: p, rule: p.rule(abs)})
	}
	return cfg, pols
}

const reloadBase = `
bpffs: /sys/fs/bpf/t
algorithms:
  - {algo: olia}
  - {algo: lia, name: keep_lia}
  - {algo: rsf, rsf_target: 20ms}
policies:
  - {cgroup: batch, algo: olia}
  - {cgroup: /cg/web, cc: cubic, dst: 192.0.2.0/24, dst_port: 443}
`

// planReload turns two configurations into the changes a reload makes,
// touching nothing that did not change.
func TestPlanReload(t *testing.T) {
	cases := []struct {
		name string
		new  string
		want []string // actions, in order
		err  string
	}{
		{"same file", reloadBase, nil, ""},
		{"same meaning, other spelling", `
bpffs: /sys/fs/bpf/t/
algorithms:
  - {algo: olia, name: mptcp_olia, rsf_target: 10ms}
  - {name: keep_lia, algo: lia}
  - {algo: rsf, rsf_target: 20000us}
policies:
  - {cgroup: /cg/batch, cc: mptcp_olia}
  - {cgroup: web, cc: cubic, dst: 192.0.2.0/24, dst_port: 443}
metrics: {listen_address: "127.0.0.1:9464", max_subflows: 4096}
events: {enabled: true}
on_exit: keep
`, nil, ""},
		{"add an algorithm and a policy, remove another", `
bpffs: /sys/fs/bpf/t
algorithms:
  - {algo: olia}
  - {algo: rsf, rsf_target: 20ms}
  - {algo: balia}
policies:
  - {cgroup: batch, algo: olia}
  - {cgroup: /cg/web, cc: cubic, dst: 192.0.2.0/24, dst_port: 443}
  - {cgroup: video, algo: balia, dst_port: 8443}
`, []string{
			"load mptcp_balia (balia)",
			"unload keep_lia",
			"attach /cg/video dst any port 8443: mptcp_balia tcp=false",
		}, ""},
		{"parameters change in place, algorithm change replaces", `
bpffs: /sys/fs/bpf/t
algorithms:
  - {algo: olia, lisa: true}
  - {algo: olia, name: keep_lia}
  - {algo: rsf, rsf_target: 30ms, trace: true}
policies:
  - {cgroup: batch, cc: mptcp_olia}
  - {cgroup: /cg/web, cc: cubic, dst: 192.0.2.0/24, dst_port: 443}
`, []string{
			"update mptcp_olia in place: {LISA:false RSFTarget:10ms Trace:false Pacing:false} -> {LISA:true RSFTarget:10ms Trace:false Pacing:false}",
			"update mptcp_rsf in place: {LISA:false RSFTarget:20ms Trace:false Pacing:false} -> {LISA:false RSFTarget:30ms Trace:true Pacing:false}",
			"replace keep_lia: lia -> olia (unload, then load)",
		}, ""},
		{"a rule's cc or tcp changes in place, a new selector is a new rule", `
bpffs: /sys/fs/bpf/t
algorithms:
  - {algo: olia}
  - {algo: lia, name: keep_lia}
  - {algo: rsf, rsf_target: 20ms}
policies:
  - {cgroup: batch, cc: keep_lia, tcp: true}
  - {cgroup: /cg/web, cc: cubic, dst: 198.51.100.0/24, dst_port: 443}
`, []string{
			"attach /cg/web dst 198.51.100.0/24 port 443: cubic tcp=false",
			"change /cg/batch dst any port 0: mptcp_olia tcp=false -> keep_lia tcp=true",
			"detach /cg/web dst 192.0.2.0/24 port 443: cubic tcp=false",
		}, ""},
		{"a rule's delayed-ACK cap changes in place", strings.Replace(reloadBase, "dst_port: 443}", "dst_port: 443, delack_max: 8ms}", 1), []string{
			"change /cg/web dst 192.0.2.0/24 port 443: cubic tcp=false -> cubic tcp=false delack_max=8ms",
		}, ""},
		{"everything goes", "bpffs: /sys/fs/bpf/t\n", []string{
			"unload mptcp_olia", "unload keep_lia", "unload mptcp_rsf",
			"detach /cg/batch dst any port 0: mptcp_olia tcp=false",
			"detach /cg/web dst 192.0.2.0/24 port 443: cubic tcp=false",
		}, ""},
		{"daemon settings", reloadBase + `
metrics: {listen_address: "127.0.0.1:9465", max_subflows: 10}
events: {namespaces: [lab]}
on_exit: remove
`, []string{
			"metrics address 127.0.0.1:9464 -> 127.0.0.1:9465",
			"metrics.max_subflows 4096 -> 10",
			"events enabled=true namespaces=[] -> enabled=true namespaces=[lab]",
			"on_exit keep -> remove",
		}, ""},
		{"pin roots do not move", `
bpffs: /sys/fs/bpf/other
policy_bpffs: /sys/fs/bpf/t-policy
`, nil, "bpffs: /sys/fs/bpf/t is in force and the file now says /sys/fs/bpf/other: a reload does not move what is pinned; restart the daemon"},
		{"a rule may not keep an algorithm the file drops", `
bpffs: /sys/fs/bpf/t
algorithms:
  - {algo: lia, name: keep_lia}
policies:
  - {cgroup: batch, cc: mptcp_olia}
`, nil, "policies[0].cc: mptcp_olia is dropped from algorithms by this file and would be unloaded; keep it in algorithms or give the rule another cc"},
	}
	old, oldPols := resolved(t, reloadBase)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, pols := resolved(t, c.new)
			plan, err := planReload(old, oldPols, cfg, pols)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := plan.actions(old, cfg)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("actions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			// What is neither added, changed nor removed is kept.
			if n := len(plan.load) + len(plan.update) + len(plan.replace) + len(plan.keep); n != len(cfg.Algorithms) {
				t.Errorf("%d algorithms planned, the file has %d", n, len(cfg.Algorithms))
			}
			if n := len(plan.attach) + len(plan.change) + len(plan.keepPolicies); n != len(cfg.Policies) {
				t.Errorf("%d rules planned, the file has %d", n, len(cfg.Policies))
			}
		})
	}
}

// The reload counters start with the start counted as a success.
func TestReloadCollector(t *testing.T) {
	start := time.Unix(1000, 0)
	c := newReloadCollector(start)
	c.record(false, time.Unix(2000, 0))
	if c.lastOK || c.failure != 1 || !c.lastSuccess.Equal(start) {
		t.Errorf("after a failure: %+v", c)
	}
	c.record(true, time.Unix(3000, 0))
	if !c.lastOK || c.success != 1 || c.lastSuccess.Unix() != 3000 {
		t.Errorf("after a success: %+v", c)
	}
}

// A reload that fails half-way takes back what it did: the algorithm it
// loaded is unloaded, the one it replaced is loaded again as it was, the
// parameters it changed are restored; the running configuration stays.
func TestReloadUndo(t *testing.T) {
	root := testkernel.PinRoot(t)
	sfx := testenv.Suffix()
	kept, renamed, added := "t_k"+sfx, "t_r"+sfx, "t_a"+sfx
	testkernel.UnloadAtCleanup(t, root, kept, renamed, added)
	cfg := testConfig(root, kept, OnExitKeep)
	cfg.Algorithms = append(cfg.Algorithms, Algorithm{Algo: "lia", Name: renamed})
	cfg.Policies = cfg.Policies[:1]
	cfg.Policies[0].Algo, cfg.Policies[0].CC = "", kept

	next := cfg
	next.Algorithms = []Algorithm{{Algo: "olia", Name: kept, LISA: true}, {Algo: "olia", Name: renamed}, {Algo: "balia", Name: added}}
	next.Policies = append(append([]Policy(nil), cfg.Policies...), Policy{Cgroup: "web", CC: added})
	fp := newFake()
	fp.failOn = added

	var logs testenv.SyncBuffer
	reload := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Policy: fp,
			Ready: func(net.Addr) { close(ready) }, Reload: reload, ReadConfig: func() (Config, error) { return next, nil }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	before, err := cc.List(root)
	if err != nil || len(before) != 2 {
		t.Fatalf("at start: %+v %v", before, err)
	}
	rulesBefore := fmt.Sprint(fp.rules)

	reload <- struct{}{}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), "configuration reload refused"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged:\n%s", logs.String())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "policies[1]: attaching to cgroup /cg/web: injected failure") {
		t.Errorf("the refusal does not name the failure:\n%s", logs.String())
	}
	after, err := cc.List(root)
	if err != nil {
		t.Fatal(err)
	}
	strip := func(l []cc.Loaded) string {
		var s []string
		for _, x := range l {
			s = append(s, fmt.Sprintf("%s %s %+v %v", x.Name, x.Algo, x.Params, x.Registered))
		}
		return strings.Join(s, "\n")
	}
	if strip(after) != strip(before) {
		t.Errorf("after the failed reload:\n%s\nwant, as before it:\n%s", strip(after), strip(before))
	}
	if cc.IsRegistered(added) {
		t.Errorf("%s, loaded by the failed reload, is still registered", added)
	}
	if got := fmt.Sprint(fp.rules); got != rulesBefore {
		t.Errorf("rules after the failed reload: %s, want %s", got, rulesBefore)
	}
}
