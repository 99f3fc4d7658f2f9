// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
)

// docs/metrics.md lists every counter with the meaning the code gives it.
func TestMIBCountersDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range MIBCounters {
		if row := "| `" + c.Name + "` | " + c.Means + " |"; !strings.Contains(string(doc), row) {
			t.Errorf("docs/metrics.md lacks the row %s", row)
		}
	}
}

// Real counters from the running kernel: the exporter's namespace and a
// named one, each labelled; a namespace that is gone is left out, not an
// error of the whole scrape.
func TestKernelMIB(t *testing.T) {
	nsName := testenv.Namespace(t, "mpcc-mibx")
	k := &KernelMIB{}
	k.SetNamespaces([]string{"", nsName, "mpcc-no-such-ns"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(k)
	n, err := testutil.GatherAndCount(reg, "mptcp_cc_kernel_mptcp_mib_total")
	if err != nil {
		t.Fatal(err)
	}
	if n < 2*20 {
		t.Fatalf("%d series; want most of the %d counters for each of two namespaces", n, len(MIBCounters))
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range mfs[0].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "netns" {
				seen[l.GetValue()] = true
			}
		}
	}
	if !seen["host"] || !seen[nsName] || len(seen) != 2 {
		t.Fatalf("namespaces exported: %v; want host and %s", seen, nsName)
	}
}
