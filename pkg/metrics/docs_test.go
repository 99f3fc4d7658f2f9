package metrics

import (
	"os"
	"regexp"
	"testing"
)

// Metrics the daemon adds to the collector's (pkg/events, pkg/daemon).
var daemonMetrics = map[string]bool{
	"mptcp_cc_pm_events_total": true, "mptcp_cc_pm_connections": true,
	"mptcp_cc_pm_event_overruns_total": true, "mptcp_cc_policy_rule_info": true,
	"mptcp_cc_policy_errors_total": true,
}

var metricName = regexp.MustCompile(`\bmptcp_cc_[a-z_]+[a-z]\b`)

// docs/metrics.md documents every metric, and it and the Grafana dashboard
// name only metrics that exist.
func TestDocsAndDashboard(t *testing.T) {
	known := map[string]bool{}
	for _, f := range families {
		known[f.name] = true
	}
	for k := range daemonMetrics {
		known[k] = true
	}
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]bool{}
	for _, m := range metricName.FindAllString(string(doc), -1) {
		inDoc[m] = true
		if !known[m] {
			t.Errorf("docs/metrics.md names %s, which is not exported", m)
		}
	}
	for m := range known {
		if !inDoc[m] {
			t.Errorf("%s is not documented in docs/metrics.md", m)
		}
	}
	dash, err := os.ReadFile("../../deploy/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range metricName.FindAllString(string(dash), -1) {
		if !known[m] {
			t.Errorf("the dashboard queries %s, which is not exported", m)
		}
	}
}
