// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"maps"
	"slices"

	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
)

// MetricNames returns the name of every metric family `mptcp-cc serve`
// may export, sorted, whether or not it has samples at the moment (a
// per-subflow family has none while no subflow is open): what dashboards,
// rules and docs may refer to. Ours are pkg/metrics' table.
func MetricNames() ([]string, error) {
	seen := map[string]bool{}
	for _, n := range metrics.Names() {
		seen[n] = true
	}
	// The runtime and process collectors always have samples: gathering
	// them names exactly what the daemon serves.
	reg, err := metrics.NewRegistry()
	if err != nil {
		return nil, err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	for _, mf := range mfs {
		seen[mf.GetName()] = true
	}
	return slices.Sorted(maps.Keys(seen)), nil
}
