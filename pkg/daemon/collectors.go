// SPDX-License-Identifier: Apache-2.0

package daemon

// The daemon's own metrics besides the subflows': the policy rules it keeps
// in force and the policy programs' error counters.

import (
	"log/slog"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// policyCollector exports the rules the daemon keeps in force, and the
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

var (
	descPolicy = prometheus.NewDesc("mptcp_cc_policy_rule_info",
		"A per-cgroup policy rule the daemon keeps in force; the value is always 1.",
		[]string{"cgroup", "cc", "dst", "dst_port", "tcp"}, nil)
	descPolicyErrors = prometheus.NewDesc("mptcp_cc_policy_errors_total",
		"Sockets whose congestion control (or delayed-ACK cap) a cgroup's policy program failed to set (bpf_setsockopt failed, e.g. the CC was unloaded).",
		[]string{"cgroup"}, nil)
	descPolicyDelack = prometheus.NewDesc("mptcp_cc_policy_delack_capped_total",
		"Sockets whose delayed-ACK timer a cgroup's policy rule capped (delack_max).",
		[]string{"cgroup"}, nil)
)

func (c *policyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPolicy
	ch <- descPolicyErrors
	ch <- descPolicyDelack
}

func (c *policyCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.policies {
		ch <- prometheus.MustNewConstMetric(descPolicy, prometheus.GaugeValue, 1,
			p.rule.Cgroup, p.rule.CC, prefixString(p.rule.Dst), strconv.Itoa(int(p.rule.DstPort)), strconv.FormatBool(p.rule.PlainTCP))
	}
	if c.pe == nil {
		return
	}
	atts, err := c.pe.List(c.root)
	if err != nil {
		// The CC metrics are still worth serving; the log says why these
		// are missing.
		c.log.Warn("reading the policies' counters", "policy_bpffs", c.root, "err", err)
		return
	}
	for _, a := range atts {
		if !a.Attached {
			continue // the cgroup is gone: its program sees no socket
		}
		ch <- prometheus.MustNewConstMetric(descPolicyErrors, prometheus.CounterValue, float64(a.Counters.Errors), a.Cgroup)
		ch <- prometheus.MustNewConstMetric(descPolicyDelack, prometheus.CounterValue, float64(a.Counters.Delack), a.Cgroup)
	}
}
