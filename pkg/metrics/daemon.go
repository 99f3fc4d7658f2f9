// SPDX-License-Identifier: Apache-2.0

package metrics

// The daemon's sources besides the BPF maps: the state `mptcp-cc serve`
// keeps (path-manager events, policies, reloads, path controllers) and the
// kernel's MIB counters it reads. Each is one collector over the table's
// families of that source.

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mptcp-cc/mptcp-cc/pkg/events"
)

// PolicyState is what the daemon reports about per-cgroup policies at a
// scrape.
type PolicyState struct {
	// Rules are the rules the daemon keeps in force.
	Rules []PolicyRule
	// Counters are those of every policy program pinned under the policy
	// root and attached to a live cgroup (nil when they cannot be read: the
	// source logs why, and the rules are still exported).
	Counters []PolicyCounters
}

// PolicyRule is one rule in force, as its labels show it.
type PolicyRule struct {
	Cgroup, CC, Dst string
	DstPort         uint16
	PlainTCP        bool
}

// PolicyCounters are the counters of one cgroup's policy program.
type PolicyCounters struct {
	Cgroup         string
	Errors, Delack uint64
}

// Policies is the daemon's source of PolicyState.
type Policies interface{ PolicyState() PolicyState }

// ReloadState counts the daemon's configuration reloads.
type ReloadState struct {
	Success, Failure uint64
	// LastOK: the last reload (or the start, before any) succeeded.
	LastOK bool
	// LastSuccess: when the configuration in force was applied in full.
	LastSuccess time.Time
}

// Reloads is the daemon's source of ReloadState.
type Reloads interface{ ReloadState() ReloadState }

// Daemon is every source of `mptcp-cc serve` besides the BPF maps (which
// Handler serves through a Collector): one field per source of the table's
// families, so its registry (Registry) is made here, from the table, and
// a family whose source is missing fails the start (and TestDaemonServesTable).
type Daemon struct {
	Events  *events.Collector
	Policy  Policies
	Reloads Reloads
	Pathctl *Pathctl
	MIB     *KernelMIB
}

// Collectors returns one prometheus.Collector per source; an error names a
// source that is not set.
func (d Daemon) Collectors() ([]prometheus.Collector, error) {
	var errs []error
	missing := func(name string) { errs = append(errs, errors.New("metrics: the daemon's "+name+" source is not set")) }
	if d.Events == nil {
		missing("events")
	}
	if d.Policy == nil {
		missing("policy")
	}
	if d.Reloads == nil {
		missing("reloads")
	}
	if d.Pathctl == nil {
		missing("pathctl")
	}
	if d.MIB == nil {
		missing("MIB")
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return []prometheus.Collector{
		sourceCollector{eventsFamilies, func(out sink) {
			d.Events.Each(func(netns string, t *events.Tracker) {
				for _, f := range eventsFamilies {
					f.events(emitter{out, f}, nsLabel(netns), t)
				}
			})
		}},
		sourceCollector{policyFamilies, func(out sink) {
			p := d.Policy.PolicyState()
			for _, f := range policyFamilies {
				f.policy(emitter{out, f}, &p)
			}
		}},
		sourceCollector{reloadFamilies, func(out sink) {
			r := d.Reloads.ReloadState()
			for _, f := range reloadFamilies {
				f.reloads(emitter{out, f}, &r)
			}
		}},
		d.Pathctl,
		d.MIB,
	}, nil
}

// Registry returns NewRegistry with d's collectors.
func (d Daemon) Registry() (*prometheus.Registry, error) {
	cols, err := d.Collectors()
	if err != nil {
		return nil, err
	}
	return NewRegistry(cols...)
}

// sourceCollector is a prometheus.Collector over the families of one
// source.
type sourceCollector struct {
	fams    []*Family
	collect func(out sink)
}

func (c sourceCollector) Describe(ch chan<- *prometheus.Desc) { describe(ch, c.fams) }

func (c sourceCollector) Collect(ch chan<- prometheus.Metric) { c.collect(chanSink(ch)) }
