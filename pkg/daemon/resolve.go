// SPDX-License-Identifier: Apache-2.0

package daemon

// Filling in a configuration's defaults, and what the resolved pathctl
// section means.

import (
	"fmt"
	"path"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
)

// Resolve fills in the defaults. It assumes the configuration is valid.
func (c Config) Resolve() Config {
	if c.BPFFS == "" {
		c.BPFFS = cc.DefaultPinRoot
	}
	if c.PolicyBPFFS == "" {
		c.PolicyBPFFS = path.Clean(c.BPFFS) + "-policy"
	}
	if c.SchedBPFFS == "" {
		c.SchedBPFFS = path.Clean(c.BPFFS) + "-sched"
	}
	scheds := make([]Scheduler, len(c.Schedulers))
	for i, s := range c.Schedulers {
		if s.Name == "" {
			s.Name = s.Algo
		}
		scheds[i] = s
	}
	c.Schedulers = scheds
	if c.OnExit == "" {
		c.OnExit = OnExitKeep
	}
	if c.Adopt == "" {
		c.Adopt = AdoptKeep
	}
	algos := make([]Algorithm, len(c.Algorithms))
	for i, a := range c.Algorithms {
		if a.Name == "" {
			if alg, err := cc.Lookup(a.Algo); err == nil {
				a.Name = alg.DefaultName()
			}
		}
		a.RSFTarget = a.Params().RSFTarget // the default if left out
		algos[i] = a
	}
	c.Algorithms = algos
	pols := make([]Policy, len(c.Policies))
	for i, p := range c.Policies {
		if p.Algo != "" {
			for _, a := range algos {
				if a.Algo == p.Algo {
					p.CC, p.Algo = a.Name, ""
				}
			}
		}
		pols[i] = p
	}
	c.Policies = pols
	if c.Metrics.ListenAddress == "" {
		c.Metrics.ListenAddress = metrics.DefaultListenAddress
	}
	if c.Metrics.MaxSubflows == nil {
		n := metrics.DefaultMaxSubflows
		c.Metrics.MaxSubflows = &n
	}
	if c.Events.Enabled == nil {
		t := true
		c.Events.Enabled = &t
	}
	c.Pathctl = c.Pathctl.resolve()
	return c
}

func (p Pathctl) resolve() Pathctl {
	if p.OwnNetns == nil {
		t := true
		p.OwnNetns = &t
	}
	if p.Apply == "" {
		p.Apply = string(pathctl.Auto)
	}
	if p.Period == 0 {
		p.Period = defaultPathPeriod
	}
	if p.MaxConnections == 0 {
		p.MaxConnections = defaultPathConns
	}
	if p.StateDir == "" {
		p.StateDir = pathctl.StateDir
	}
	return p
}

// prefer is the resolved preference on a tie.
func (p Pathctl) prefer() string {
	if p.Prefer == "" {
		return "goodput"
	}
	return p.Prefer
}

// peeks says whether the controllers peek at backup paths (default yes).
func (p Pathctl) peeks() bool { return p.Peeks == nil || *p.Peeks }

// engine is the controllers' engine configuration.
func (p Pathctl) engine() pathctl.Config {
	reset, _ := pathctl.ParseOnStall(p.OnStall, pathctl.Apply(p.Apply)) // checked with the configuration
	preferBest, _ := pathctl.ParsePrefer(p.Prefer)                      // checked with the configuration
	cfg := pathctl.Config{Period: p.Period, ResetStalled: reset, PreferBestPath: preferBest}
	if !p.peeks() {
		cfg.Peek = pathctl.NoPeeks
	}
	return cfg
}

// describe is a resolved section in one line, for the reload's log.
func (p Pathctl) describe() string {
	if !p.Enabled {
		return "off"
	}
	ns := make([]string, 0, len(p.namespaces()))
	for _, n := range p.namespaces() {
		ns = append(ns, nsName(n))
	}
	return fmt.Sprintf("on in %v apply=%s period=%v peeks=%v prefer=%s max_connections=%d peers=%v ports=%v state_dir=%s",
		ns, p.Apply, p.Period, p.peeks(), p.prefer(), p.MaxConnections, p.Peers, p.Ports, p.StateDir)
}

// namespaces are the network namespaces a resolved section controls ("":
// the daemon's own), none when it is off.
func (p Pathctl) namespaces() []string {
	if !p.Enabled {
		return nil
	}
	var out []string
	if *p.OwnNetns {
		out = append(out, "")
	}
	return append(out, p.Namespaces...)
}
