// SPDX-License-Identifier: Apache-2.0

// Package doctor tells an operator whether this host is ready for
// mptcp-cc, and what to do where it is not: one finding per check, each
// with its fix. `mptcp-cc doctor` prints them. The checks read only; none
// changes the host.
package doctor

import (
	"fmt"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

// Severity grades a finding.
type Severity string

const (
	OK   Severity = "ok"
	Info Severity = "info" // worth knowing, nothing to fix
	Warn Severity = "warn" // works, but not as an operator would want
	Fail Severity = "fail" // not ready: mptcp-cc cannot do its job here
)

// Finding is one check's answer.
type Finding struct {
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
	Fix      string   `json:"fix,omitempty"`
	Doc      string   `json:"doc,omitempty"` // where the docs explain it
}

// Options say where to look.
type Options struct {
	// Netns is the named network namespace (ip netns) whose MPTCP, path
	// manager and default congestion control are checked; "" is this
	// process's.
	Netns string
	// PinRoot is where the algorithms are pinned (default
	// /sys/fs/bpf/mptcp-cc).
	PinRoot string
	// SchedPinRoot is where the packet schedulers are pinned (default
	// /sys/fs/bpf/mptcp-cc-sched).
	SchedPinRoot string
}

// check is one area of the host; it appends its findings.
type check func(o Options, r *report)

// checks, in the order an operator would fix them.
var checks = []check{
	checkKernel,
	checkPrivileges,
	checkBPFFS,
	checkMPTCP,
	checkPathManager,
	checkDefaults,
	checkAlgorithms,
	checkIntegrity,
	checkSchedulers,
}

// report collects the findings, and holds what more than one check reads,
// read once: the kernel's features, the privileges, the loaded algorithms.
type report struct {
	findings  []Finding
	features  kernel.Features
	privErr   error       // kernel.CheckPrivileges
	loaded    []cc.Loaded // under Options.PinRoot; nil when unreadable
	loadedErr error
}

func (r *report) add(f Finding) { r.findings = append(r.findings, f) }

// Run runs every check.
func Run(o Options) []Finding {
	if o.PinRoot == "" {
		o.PinRoot = cc.DefaultPinRoot
	}
	if o.SchedPinRoot == "" {
		o.SchedPinRoot = sched.DefaultPinRoot
	}
	r := &report{features: kernel.Probe(), privErr: kernel.CheckPrivileges()}
	if r.privErr == nil {
		r.loaded, r.loadedErr = cc.List(o.PinRoot)
	}
	for _, c := range checks {
		c(o, r)
	}
	return r.findings
}

// Ready reports whether no finding fails.
func Ready(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == Fail {
			return false
		}
	}
	return true
}

// where names the namespace checked, for messages.
func where(o Options) string {
	if o.Netns == "" {
		return "this network namespace"
	}
	return "network namespace " + o.Netns
}

// inNS prefixes a command with `ip netns exec` where the checked
// namespace is a named one, so a fix can be pasted as it is.
func inNS(o Options, cmd string) string {
	if o.Netns == "" {
		return cmd
	}
	if rest, ok := strings.CutPrefix(cmd, "ip "); ok {
		return "ip -n " + o.Netns + " " + rest
	}
	return fmt.Sprintf("ip netns exec %s %s", o.Netns, cmd)
}
