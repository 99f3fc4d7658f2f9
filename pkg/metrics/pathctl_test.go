// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The path controller's series: gauges by current mode, counters from
// zero for every cause of every controlled namespace, and lint-clean.
func TestPathctlCollector(t *testing.T) {
	var p Pathctl
	p.Namespace("")
	p.Mode("lab", 1, "multipath")
	p.Mode("lab", 2, "multipath")
	p.Mode("lab", 2, "trial")
	p.Mode("lab", 3, "best-path")
	p.Mode("", 9, "multipath")
	p.Released("", 9)
	p.Switched("lab", "best-path", "trial")
	p.Switched("lab", "best-path", "chosen")
	p.Switched("lab", "best-path", "trial")
	p.ApplyFailed("lab")
	p.Skipped()
	p.Skipped()

	want := `
# HELP mptcp_cc_pathctl_connections MPTCP connections the daemon's path controller controls, by network namespace and mode (multipath, best-path, or trial while either is tried).
# TYPE mptcp_cc_pathctl_connections gauge
mptcp_cc_pathctl_connections{mode="best-path",netns="host"} 0
mptcp_cc_pathctl_connections{mode="multipath",netns="host"} 0
mptcp_cc_pathctl_connections{mode="trial",netns="host"} 0
mptcp_cc_pathctl_connections{mode="best-path",netns="lab"} 1
mptcp_cc_pathctl_connections{mode="multipath",netns="lab"} 1
mptcp_cc_pathctl_connections{mode="trial",netns="lab"} 1
# HELP mptcp_cc_pathctl_apply_errors_total Requests to set or clear a backup flag that the kernel refused (not repeated while the decision stands).
# TYPE mptcp_cc_pathctl_apply_errors_total counter
mptcp_cc_pathctl_apply_errors_total{netns="host"} 0
mptcp_cc_pathctl_apply_errors_total{netns="lab"} 1
# HELP mptcp_cc_pathctl_skipped_total MPTCP connections that matched the pathctl section but found the controller at its max_connections bound.
# TYPE mptcp_cc_pathctl_skipped_total counter
mptcp_cc_pathctl_skipped_total 2
`
	if err := testutil.CollectAndCompare(&p, strings.NewReader(want), "mptcp_cc_pathctl_connections", "mptcp_cc_pathctl_apply_errors_total", "mptcp_cc_pathctl_skipped_total"); err != nil {
		t.Error(err)
	}
	// 2 namespaces x 2 targets x 6 causes, all present from zero.
	if n := testutil.CollectAndCount(&p, "mptcp_cc_pathctl_switches_total"); n != 24 {
		t.Errorf("%d switch series, want 24", n)
	}
	sw := `
# HELP mptcp_cc_pathctl_switches_total Decisions of the path controller that switched a connection's mode or ended a trial, by the mode they put it in and why (docs/metrics.md lists the causes).
# TYPE mptcp_cc_pathctl_switches_total counter
`
	for _, ns := range []string{"host", "lab"} {
		for _, to := range []string{"best-path", "multipath"} {
			for _, c := range []string{"chosen", "closed", "degraded", "kept", "stall", "trial"} {
				v := "0"
				if ns == "lab" && to == "best-path" && c == "trial" {
					v = "2"
				} else if ns == "lab" && to == "best-path" && c == "chosen" {
					v = "1"
				}
				sw += `mptcp_cc_pathctl_switches_total{cause="` + c + `",netns="` + ns + `",to="` + to + `"} ` + v + "\n"
			}
		}
	}
	if err := testutil.CollectAndCompare(&p, strings.NewReader(sw), "mptcp_cc_pathctl_switches_total"); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(&p)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range problems {
		t.Errorf("lint: %s: %s", pr.Metric, pr.Text)
	}
}
