// SPDX-License-Identifier: Apache-2.0

package daemon_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mptcp-cc/mptcp-cc/pkg/daemon"
	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
)

// A metric name in prose: not part of a recording rule's name
// (level:metric:operations), which the rules' own tests check.
var docMetricName = regexp.MustCompile(`(?:^|[^:\w])(mptcp_cc_[a-z_]+[a-z])(?:[^:\w]|$)`)

// docs/metrics.md documents every mptcp_cc_ metric the daemon serves and
// names no other, and each family of pkg/metrics' table has its row there
// with the table's type and labels.
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

	rows := docRows(string(doc))
	for _, f := range metrics.Families() {
		row, ok := rows[f.Name]
		if !ok {
			t.Errorf("docs/metrics.md has no row for %s (| `%s` | type | labels | meaning |)", f.Name, f.Name)
			continue
		}
		typ := "gauge"
		if f.Type == prometheus.CounterValue {
			typ = "counter"
		}
		if row.typ != typ {
			t.Errorf("docs/metrics.md says %s is a %s; it is a %s", f.Name, row.typ, typ)
		}
		if !slices.Equal(row.labels, f.Labels) {
			t.Errorf("docs/metrics.md gives %s the labels %q; it has %q", f.Name, row.labels, f.Labels)
		}
	}
}

type docRow struct {
	typ    string
	labels []string
}

var backquoted = regexp.MustCompile("`([^`]+)`")

// docRows reads the metric tables of docs/metrics.md: | `name` | type |
// labels | meaning |, where a section's "All with the labels ..." line
// gives the labels its rows' labels column adds to.
func docRows(doc string) map[string]docRow {
	rows := map[string]docRow{}
	var base []string
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			base = nil
		case strings.HasPrefix(line, "All with the labels "):
			base = nil
			for _, m := range backquoted.FindAllStringSubmatch(line, -1) {
				base = append(base, m[1])
			}
		case strings.HasPrefix(line, "| `mptcp_cc_"):
			cols := strings.Split(line, "|")
			if len(cols) < 5 {
				continue
			}
			name := strings.Trim(strings.TrimSpace(cols[1]), "`")
			r := docRow{typ: strings.TrimSpace(cols[2]), labels: append([]string(nil), base...)}
			for _, m := range backquoted.FindAllStringSubmatch(cols[3], -1) {
				r.labels = append(r.labels, m[1])
			}
			rows[name] = r
		}
	}
	return rows
}
