// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mptcp-cc/mptcp-cc/pkg/events"
	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
)

// descName reads a descriptor's metric name: client_golang has no accessor
// for it, and its String form has been stable since v1.0.
var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// MetricNames returns the name of every metric family `mptcp-cc serve`
// may export, sorted, whether or not it has samples at the moment (a
// per-subflow family has none while no subflow is open): what dashboards,
// rules and docs may refer to.
func MetricNames() ([]string, error) {
	seen := map[string]bool{}
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range []prometheus.Collector{
			metrics.NewCollector(nil, metrics.Options{}), &events.Collector{}, &policyCollector{}, newReloadCollector(time.Time{}), &metrics.Pathctl{}, &metrics.KernelMIB{},
		} {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		if m := descName.FindStringSubmatch(d.String()); m != nil {
			seen[m[1]] = true
		}
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
