// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
)

// PathctlModes are the values of the mode label: a connection's mode as
// its controller holds it, or trial while either mode is on trial.
var PathctlModes = []string{"multipath", "best-path", "trial"}

// PathctlTargets are the values of the to label: the mode a decision put
// the connection's flags in.
var PathctlTargets = []string{"multipath", "best-path"}

// Pathctl exports what the daemon's path controllers do (pkg/pathctl): it
// keeps the counts the daemon reports to it, so a scrape reads no kernel
// state. Namespaces are labelled as the daemon names them ("" is exported
// as "host"). Every namespace the daemon controls, and every combination
// of to and cause, is exported from zero, not from its first switch, so
// rate() and absent() work from the start. Safe for concurrent use.
type Pathctl struct {
	mu       sync.Mutex
	nss      map[string]bool
	modes    map[pathctlConn]string
	switches map[pathctlSwitch]uint64
	applyErr map[string]uint64
	skipped  uint64
}

type pathctlConn struct {
	ns    string
	token uint32
}

type pathctlSwitch struct{ ns, to, cause string }

func (p *Pathctl) init() {
	if p.nss == nil {
		p.nss, p.modes, p.switches, p.applyErr = map[string]bool{}, map[pathctlConn]string{}, map[pathctlSwitch]uint64{}, map[string]uint64{}
	}
}

// Namespace exports ns's series (zero until something happens there).
// Namespaces are never dropped: their counters keep counting since the
// daemon started, across reloads that stop and start controlling them.
func (p *Pathctl) Namespace(ns string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	p.nss[ns] = true
}

// Mode records a controlled connection's mode (one of PathctlModes).
func (p *Pathctl) Mode(ns string, token uint32, mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	p.nss[ns] = true
	p.modes[pathctlConn{ns, token}] = mode
}

// Released records that a connection is no longer controlled.
func (p *Pathctl) Released(ns string, token uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	delete(p.modes, pathctlConn{ns, token})
}

// Switched counts one reported decision; cause is one of pathctl.Causes.
func (p *Pathctl) Switched(ns, to, cause string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	p.nss[ns] = true
	p.switches[pathctlSwitch{ns, to, cause}]++
}

// ApplyFailed counts one failed attempt to set a decision's flags.
func (p *Pathctl) ApplyFailed(ns string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	p.nss[ns] = true
	p.applyErr[ns]++
}

// Skipped counts a connection left uncontrolled because the bound was
// reached.
func (p *Pathctl) Skipped() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.skipped++
}

var (
	descPathctlConns = prometheus.NewDesc(ns+"_pathctl_connections",
		"MPTCP connections the daemon's path controller controls, by network namespace and mode (multipath, best-path, or trial while either is tried).", []string{"netns", "mode"}, nil)
	descPathctlSwitches = prometheus.NewDesc(ns+"_pathctl_switches_total",
		"Decisions of the path controller that switched a connection's mode or ended a trial, by the mode they put it in and why (docs/metrics.md lists the causes).", []string{"netns", "to", "cause"}, nil)
	descPathctlApplyErr = prometheus.NewDesc(ns+"_pathctl_apply_errors_total",
		"Requests to set or clear a backup flag that the kernel refused (not repeated while the decision stands).", []string{"netns"}, nil)
	descPathctlSkipped = prometheus.NewDesc(ns+"_pathctl_skipped_total",
		"MPTCP connections that matched the pathctl section but found the controller at its max_connections bound.", nil, nil)
)

// Describe implements prometheus.Collector.
func (p *Pathctl) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPathctlConns
	ch <- descPathctlSwitches
	ch <- descPathctlApplyErr
	ch <- descPathctlSkipped
}

// Collect implements prometheus.Collector.
func (p *Pathctl) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	nss := make([]string, 0, len(p.nss))
	for n := range p.nss {
		nss = append(nss, n)
	}
	sort.Strings(nss)
	count := map[pathctlSwitch]int{} // by ns and mode
	for c, m := range p.modes {
		count[pathctlSwitch{ns: c.ns, to: m}]++
	}
	causes := pathctl.Causes
	for _, n := range nss {
		label := n
		if label == "" {
			label = "host"
		}
		for _, m := range PathctlModes {
			ch <- prometheus.MustNewConstMetric(descPathctlConns, prometheus.GaugeValue, float64(count[pathctlSwitch{ns: n, to: m}]), label, m)
		}
		for _, to := range PathctlTargets {
			for _, c := range causes {
				ch <- prometheus.MustNewConstMetric(descPathctlSwitches, prometheus.CounterValue, float64(p.switches[pathctlSwitch{n, to, c}]), label, to, c)
			}
		}
		ch <- prometheus.MustNewConstMetric(descPathctlApplyErr, prometheus.CounterValue, float64(p.applyErr[n]), label)
	}
	ch <- prometheus.MustNewConstMetric(descPathctlSkipped, prometheus.CounterValue, float64(p.skipped))
}
