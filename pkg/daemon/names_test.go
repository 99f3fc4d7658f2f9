// SPDX-License-Identifier: Apache-2.0

package daemon_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/daemon"
)

// A metric name in prose: not part of a recording rule's name
// (level:metric:operations), which the rules' own tests check.
var docMetricName = regexp.MustCompile(`(?:^|[^:\w])(mptcp_cc_[a-z_]+[a-z])(?:[^:\w]|$)`)

// docs/metrics.md documents every mptcp_cc_ metric the daemon serves and
// names no other.
func TestMetricNamesDocumented(t *testing.T) {
	names, err := daemon.MetricNames()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	for _, want := range []string{"mptcp_cc_subflow_cwnd_segments", "mptcp_cc_pm_events_total", "mptcp_cc_policy_errors_total", "process_resident_memory_bytes", "go_goroutines"} {
		if !known[want] {
			t.Errorf("MetricNames lacks %s: %v", want, names)
		}
	}
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		for _, m := range docMetricName.FindAllStringSubmatch(line, -1) {
			inDoc[m[1]] = true
			if !known[m[1]] {
				t.Errorf("docs/metrics.md names %s, which is not exported", m[1])
			}
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "mptcp_cc_") && !inDoc[n] {
			t.Errorf("%s is not documented in docs/metrics.md", n)
		}
	}
}
