// SPDX-License-Identifier: Apache-2.0

package daemon

// The daemon's own sources of metrics besides the subflows': the policy
// rules it keeps in force with the policy programs' counters, and its
// reloads. pkg/metrics declares their families and reads them
// (metrics.Daemon).

import (
	"log/slog"
	"sync"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
)

// policyCollector reports the rules the daemon keeps in force, and the
// error counters of every policy pinned under the policy root: those
// attached with `mptcp-cc policy attach` fail the same way, and the
// counter is per cgroup program, not per rule.
type policyCollector struct {
	pe   PolicyEngine
	root string
	log  *slog.Logger

	mu       sync.Mutex
	policies []resolvedPolicy
}

func (c *policyCollector) set(ps []resolvedPolicy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.policies = ps
}

// PolicyState implements metrics.Policies.
func (c *policyCollector) PolicyState() metrics.PolicyState {
	c.mu.Lock()
	defer c.mu.Unlock()
	var st metrics.PolicyState
	for _, p := range c.policies {
		st.Rules = append(st.Rules, metrics.PolicyRule{Cgroup: p.rule.Cgroup, CC: p.rule.CC, Dst: prefixString(p.rule.Dst), DstPort: p.rule.DstPort, PlainTCP: p.rule.PlainTCP})
	}
	if c.pe == nil {
		return st
	}
	atts, err := c.pe.List(c.root)
	if err != nil {
		// The CC metrics are still worth serving; the log says why these
		// are missing.
		c.log.Warn("reading the policies' counters", "policy_bpffs", c.root, "err", err)
		return st
	}
	for _, a := range atts {
		if !a.Attached {
			continue // the cgroup is gone: its program sees no socket
		}
		st.Counters = append(st.Counters, metrics.PolicyCounters{Cgroup: a.Cgroup, Errors: a.Counters.Errors, Delack: a.Counters.Delack})
	}
	return st
}

// reloadCollector counts reloads.
type reloadCollector struct {
	mu               sync.Mutex
	success, failure uint64
	lastOK           bool
	lastSuccess      time.Time
}

func newReloadCollector(start time.Time) *reloadCollector {
	// The configuration read at start counts as the first successful load,
	// so the timestamp says since when the configuration in force is.
	return &reloadCollector{lastOK: true, lastSuccess: start}
}

func (c *reloadCollector) record(ok bool, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastOK = ok
	if ok {
		c.success++
		c.lastSuccess = at
	} else {
		c.failure++
	}
}

// ReloadState implements metrics.Reloads.
func (c *reloadCollector) ReloadState() metrics.ReloadState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return metrics.ReloadState{Success: c.success, Failure: c.failure, LastOK: c.lastOK, LastSuccess: c.lastSuccess}
}
