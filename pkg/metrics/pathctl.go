// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
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

// pathctlReading is what one scrape of a Pathctl reads: the counts
// themselves (under its lock), the namespaces in order, and the
// connections by namespace and mode.
type pathctlReading struct {
	p     *Pathctl
	nss   []string
	count map[pathctlSwitch]int // by ns and mode (to)
}

// Describe implements prometheus.Collector.
func (p *Pathctl) Describe(ch chan<- *prometheus.Desc) { describe(ch, pathctlFamilies) }

// Collect implements prometheus.Collector.
func (p *Pathctl) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	r := &pathctlReading{p: p, nss: make([]string, 0, len(p.nss)), count: map[pathctlSwitch]int{}}
	for n := range p.nss {
		r.nss = append(r.nss, n)
	}
	sort.Strings(r.nss)
	for c, m := range p.modes {
		r.count[pathctlSwitch{ns: c.ns, to: m}]++
	}
	for _, f := range pathctlFamilies {
		f.pathctl(emitter{chanSink(ch), f}, r)
	}
}
