// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// A per-subflow metric of a field of the BPF record is one entry in the
// table (with the field in struct mpcc_subflow and a line in
// docs/metrics.md: docs/architecture.md, "A metric"). This one reads
// updated_ns, a field no family exports, straight from the record
// pkg/abi generates, and both ways of serving carry it.
func TestSubflowFamilyFromRecord(t *testing.T) {
	entry := &Family{Name: "mptcp_cc_subflow_updated_seconds", Type: gauge, Labels: subflowLabels,
		Help:    "When the congestion control last updated the subflow's record (CLOCK_MONOTONIC).",
		subflow: func(s *stats.Subflow) float64 { return float64(s.Record.UpdatedNs) / 1e9 }}
	families = append(families, entry)
	index()
	defer func() {
		families = families[:len(families)-1]
		index()
	}()

	snap := synthetic(1, 2, 0)
	// The second subflow has no record (it did not come from a map): its
	// readers see zeros.
	snap.Subflows[0].Record = &abi.Subflow{UpdatedNs: 1_500_000_000}
	c := NewCollector(stats.Static(snap), Options{MaxSubflows: 10, Logger: quiet()})
	var text bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := `# HELP mptcp_cc_subflow_updated_seconds When the congestion control last updated the subflow's record (CLOCK_MONOTONIC).
# TYPE mptcp_cc_subflow_updated_seconds gauge
mptcp_cc_subflow_updated_seconds{cc="mptcp_olia",algo="olia",token="00001000",subflow="1",local="10.0.0.1:20000",remote="10.1.0.1:5201"} 1.5
mptcp_cc_subflow_updated_seconds{cc="mptcp_olia",algo="olia",token="00001000",subflow="2",local="10.0.1.1:20000",remote="10.1.0.1:5201"} 0
`
	if !strings.Contains(text.String(), want) {
		t.Errorf("WriteText lacks\n%s", want)
	}
	// The registry's encoder sorts the labels.
	sorted := `# HELP mptcp_cc_subflow_updated_seconds When the congestion control last updated the subflow's record (CLOCK_MONOTONIC).
# TYPE mptcp_cc_subflow_updated_seconds gauge
mptcp_cc_subflow_updated_seconds{algo="olia",cc="mptcp_olia",local="10.0.0.1:20000",remote="10.1.0.1:5201",subflow="1",token="00001000"} 1.5
mptcp_cc_subflow_updated_seconds{algo="olia",cc="mptcp_olia",local="10.0.1.1:20000",remote="10.1.0.1:5201",subflow="2",token="00001000"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(sorted), entry.Name); err != nil {
		t.Error(err)
	}
}
