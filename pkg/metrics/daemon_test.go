// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mptcp-cc/mptcp-cc/pkg/events"
	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
)

// Every family of the table has a valid name, a help, one way to be read,
// and a name of its own; the plain per-subflow families share the one
// subflowLabels slice (the text writer's label reuse compares it).
func TestFamilies(t *testing.T) {
	name := regexp.MustCompile(`^mptcp_cc_[a-z_]+[a-z]$`)
	seen := map[string]bool{}
	for _, f := range Families() {
		if !name.MatchString(f.Name) || f.Help == "" || seen[f.Name] {
			t.Errorf("%q: want a unique mptcp_cc_ name and a help", f.Name)
		}
		seen[f.Name] = true
		if n := f.readers(); n != 1 {
			t.Errorf("%s has %d read functions, want 1", f.Name, n)
		}
		if (f.Type == counter) != strings.HasSuffix(f.Name, "_total") {
			t.Errorf("%s: counters, and only they, end in _total", f.Name)
		}
		if f.subflow != nil && &f.Labels[0] != &subflowLabels[0] {
			t.Errorf("%s: a plain per-subflow family is labelled subflowLabels itself", f.Name)
		}
		if f.algorithm != nil && !slices.Equal(f.Labels, algoLabels) {
			t.Errorf("%s: a per-algorithm family is labelled algoLabels", f.Name)
		}
	}
}

// The daemon serves every family of the table: Collector the maps', and
// Daemon's collectors the others, each exactly once.
func TestDaemonServesTable(t *testing.T) {
	d := Daemon{Events: &events.Collector{}, Policy: policies{}, Reloads: reloads{}, Pathctl: &Pathctl{}, MIB: &KernelMIB{}}
	cols, err := d.Collectors()
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc)
	go func() {
		NewCollector(nil, Options{}).Describe(ch)
		for _, c := range cols {
			c.Describe(ch)
		}
		close(ch)
	}()
	described := map[string]int{}
	for d := range ch {
		for _, f := range families {
			if f.desc == d {
				described[f.Name]++
			}
		}
	}
	for _, f := range families {
		if described[f.Name] != 1 {
			t.Errorf("%s is described by %d collectors, want 1", f.Name, described[f.Name])
		}
	}
	if _, err := (Daemon{Events: &events.Collector{}}).Collectors(); err == nil || !strings.Contains(err.Error(), "policy source is not set") {
		t.Errorf("a missing source: %v", err)
	}
}

type policies struct{}

func (policies) PolicyState() PolicyState {
	return PolicyState{Rules: []PolicyRule{{Cgroup: "/a", CC: "mptcp_olia", Dst: "10.0.0.0/8", DstPort: 443, PlainTCP: true}},
		Counters: []PolicyCounters{{Cgroup: "/a", Errors: 2, Delack: 3}}}
}

type reloads struct{}

func (reloads) ReloadState() ReloadState {
	return ReloadState{Success: 2, Failure: 1, LastOK: true, LastSuccess: time.Unix(1500, 0)}
}

func TestDaemonSources(t *testing.T) {
	tr := events.NewTracker(0)
	tr.Handle(mptcpnl.Event{Type: mptcpnl.EventCreated, Token: 1}, time.Now())
	ev := &events.Collector{}
	ev.Add("", tr)
	ev.Add("lab-c", events.NewTracker(0))
	reg, err := Daemon{Events: ev, Policy: policies{}, Reloads: reloads{}, Pathctl: &Pathctl{}, MIB: &KernelMIB{}}.Registry()
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP mptcp_cc_pm_connections Open MPTCP connections the path manager's events reported (those created before the daemon subscribed are counted once one of their events arrives).
# TYPE mptcp_cc_pm_connections gauge
mptcp_cc_pm_connections{netns="host"} 1
mptcp_cc_pm_connections{netns="lab-c"} 0
# HELP mptcp_cc_policy_delack_capped_total Sockets whose delayed-ACK timer a cgroup's policy rule capped (delack_max).
# TYPE mptcp_cc_policy_delack_capped_total counter
mptcp_cc_policy_delack_capped_total{cgroup="/a"} 3
# HELP mptcp_cc_policy_rule_info A per-cgroup policy rule the daemon keeps in force; the value is always 1.
# TYPE mptcp_cc_policy_rule_info gauge
mptcp_cc_policy_rule_info{cc="mptcp_olia",cgroup="/a",dst="10.0.0.0/8",dst_port="443",tcp="true"} 1
# HELP mptcp_cc_config_reloads_total Configuration reloads (SIGHUP, systemctl reload) by result: success, or failure (refused, or applied with a removal that failed).
# TYPE mptcp_cc_config_reloads_total counter
mptcp_cc_config_reloads_total{result="failure"} 1
mptcp_cc_config_reloads_total{result="success"} 2
# HELP mptcp_cc_config_last_reload_success_timestamp_seconds When the configuration in force was applied in full (the start, or the last successful reload), in seconds since the Unix epoch.
# TYPE mptcp_cc_config_last_reload_success_timestamp_seconds gauge
mptcp_cc_config_last_reload_success_timestamp_seconds 1500
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "mptcp_cc_pm_connections", "mptcp_cc_policy_delack_capped_total",
		"mptcp_cc_policy_rule_info", "mptcp_cc_config_reloads_total", "mptcp_cc_config_last_reload_success_timestamp_seconds"); err != nil {
		t.Fatal(err)
	}
	n, err := testutil.GatherAndCount(reg, "mptcp_cc_pm_events_total")
	if err != nil || n != 2*len(events.KnownTypes) {
		t.Fatalf("events series: %d %v, want every known type for each namespace", n, err)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
		t.Fatalf("lint: %v %v", probs, err)
	}
}
