// SPDX-License-Identifier: Apache-2.0

package daemon

// Validating a configuration: every problem, with the field it is in.

import (
	"errors"
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

var validCCName = regexp.MustCompile(`^[a-z0-9_-]{1,15}$`)

// validate returns every problem, with field paths (lines are found by
// ParseConfig).
func (c Config) validate() []Problem {
	var v validation
	v.top(c)
	byAlgo := v.algorithms(c.Algorithms)
	v.policies(c.Policies, byAlgo)
	v.schedulers(c.Schedulers, c.NetnsSchedulers)
	v.metricsAndEvents(c.Metrics, c.Events)
	v.pathctl(c.Pathctl)
	return v.probs
}

// validation collects the problems of a configuration.
type validation struct{ probs []Problem }

func (v *validation) bad(field, format string, args ...any) {
	v.probs = append(v.probs, Problem{Field: field, Msg: fmt.Sprintf(format, args...)})
}

// top checks on_exit and the pin roots.
func (v *validation) top(c Config) {
	switch c.OnExit {
	case "", OnExitKeep, OnExitRemove:
	default:
		v.bad("on_exit", "%q is neither keep nor remove", c.OnExit)
	}
	switch c.Adopt {
	case "", AdoptKeep, AdoptUpgrade:
	default:
		v.bad("adopt", "%q is neither keep nor upgrade", c.Adopt)
	}
	if c.BPFFS != "" && !path.IsAbs(c.BPFFS) {
		v.bad("bpffs", "%q is not an absolute path", c.BPFFS)
	}
	if c.PolicyBPFFS != "" && !path.IsAbs(c.PolicyBPFFS) {
		v.bad("policy_bpffs", "%q is not an absolute path", c.PolicyBPFFS)
	}
	if c.BPFFS != "" && c.PolicyBPFFS != "" && path.Clean(c.BPFFS) == path.Clean(c.PolicyBPFFS) {
		v.bad("policy_bpffs", "must differ from bpffs (%s): algorithms and policies are pinned in separate directories", c.BPFFS)
	}
	if c.SchedBPFFS != "" && !path.IsAbs(c.SchedBPFFS) {
		v.bad("sched_bpffs", "%q is not an absolute path", c.SchedBPFFS)
	} else if path.IsAbs(c.BPFFS) || c.BPFFS == "" {
		// Compared as Resolve will make them, so a default cannot collide.
		r := c.Resolve()
		for _, other := range []struct{ field, root string }{{"bpffs", r.BPFFS}, {"policy_bpffs", r.PolicyBPFFS}} {
			if path.Clean(r.SchedBPFFS) == path.Clean(other.root) {
				v.bad("sched_bpffs", "%s is also %s: schedulers are pinned in a directory of their own (default <bpffs>-sched)", r.SchedBPFFS, other.field)
			}
		}
	}
}

var validSchedName = validCCName

// schedulers checks the schedulers and the namespaces' schedulers.
func (v *validation) schedulers(scheds []Scheduler, nss []NetnsScheduler) {
	names := map[string]int{}
	for i, s := range scheds {
		f := fmt.Sprintf("schedulers[%d]", i)
		if s.Algo == "" {
			v.bad(f+".algo", "missing: one of %s", strings.Join(sched.Names(), ", "))
			continue
		}
		if _, err := sched.Lookup(s.Algo); err != nil {
			v.bad(f+".algo", "%v", err)
			continue
		}
		name := s.Name
		if name == "" {
			name = s.Algo
		} else if !validSchedName.MatchString(name) {
			v.bad(f+".name", "%q: a scheduler name is 1 to 15 characters of a-z, 0-9, '_' and '-'", name)
		}
		if name == "default" {
			v.bad(f+".name", "\"default\" is the kernel's own scheduler: give the entry another name")
		}
		if j, dup := names[name]; dup {
			v.bad(f+".name", "%q is also the name of schedulers[%d]; give one of them another name", name, j)
		}
		names[name] = i
		if len(s.Args) > len(sched.Params{}.Args) {
			v.bad(f+".args", "%d values: a scheduler has %d tunables (0 keeps one's default)", len(s.Args), len(sched.Params{}.Args))
		}
	}
	seen := map[string]int{}
	for i, n := range nss {
		f := fmt.Sprintf("netns_schedulers[%d]", i)
		if n.Netns != "" && netns.CheckName(n.Netns) != nil {
			v.bad(f+".netns", "%q is not a network namespace name (as `ip netns list` shows them; leave it out for the daemon's own)", n.Netns)
		}
		if j, dup := seen[n.Netns]; dup {
			v.bad(f+".netns", "netns_schedulers[%d] already sets the scheduler of %s", j, nsName(n.Netns))
		}
		seen[n.Netns] = i
		switch {
		case n.Scheduler == "":
			v.bad(f+".scheduler", "missing: a registered scheduler (a name of schedulers, or \"default\", the kernel's own)")
		case !validSchedName.MatchString(n.Scheduler):
			v.bad(f+".scheduler", "%q is not a scheduler name (1 to 15 characters of a-z, 0-9, '_' and '-')", n.Scheduler)
		}
	}
}

// algorithms checks the algorithms list; it returns the registered names
// of each algorithm.
func (v *validation) algorithms(algos []Algorithm) map[string][]string {
	names := map[string]int{}
	byAlgo := map[string][]string{}
	for i, a := range algos {
		f := fmt.Sprintf("algorithms[%d]", i)
		if a.Algo == "" {
			v.bad(f+".algo", "missing: one of %s", strings.Join(cc.Names(), ", "))
			continue
		}
		alg, err := cc.Lookup(a.Algo)
		if err != nil {
			v.bad(f+".algo", "%v", err)
			continue
		}
		name := a.Name
		if name == "" {
			name = alg.DefaultName()
		} else if !validCCName.MatchString(name) {
			v.bad(f+".name", "%q: a congestion control name is 1 to 15 characters of a-z, 0-9, '_' and '-'", name)
		}
		if j, dup := names[name]; dup {
			v.bad(f+".name", "%q is also the name of algorithms[%d]; give one of them another name", name, j)
		}
		names[name] = i
		byAlgo[a.Algo] = append(byAlgo[a.Algo], name)
		var pe *cc.ParamError
		if _, err := cc.ParseParams(a.paramInput()); errors.As(err, &pe) {
			v.bad(f+"."+string(pe.Param), "%s", pe.Msg)
		}
	}
	return byAlgo
}

// policies checks the policies against each other and the algorithms.
func (v *validation) policies(pols []Policy, byAlgo map[string][]string) {
	rules := map[string]int{}
	for i, p := range pols {
		f := fmt.Sprintf("policies[%d]", i)
		if p.Cgroup == "" {
			v.bad(f+".cgroup", "missing: a cgroup v2 directory, absolute or relative to the cgroup v2 mount")
		} else if strings.ContainsRune(p.Cgroup, 0) {
			v.bad(f+".cgroup", "contains a NUL byte")
		} else {
			dst, _ := parseDst(p.Dst)
			key := fmt.Sprintf("%s|%v|%d", path.Clean(p.Cgroup), dst, p.DstPort)
			if j, dup := rules[key]; dup {
				v.bad(f, "policies[%d] already has a rule for cgroup %q with the same dst and dst_port; merge them", j, p.Cgroup)
			}
			rules[key] = i
		}
		v.policyCC(f, p, byAlgo)
		if p.Dst != "" {
			if _, err := parseDst(p.Dst); err != nil {
				v.bad(f+".dst", "%v", err)
			}
		}
	}
}

// policyCC checks what congestion control a policy gives (field f).
func (v *validation) policyCC(f string, p Policy, byAlgo map[string][]string) {
	switch {
	case p.CC != "" && p.Algo != "":
		v.bad(f, "give either cc (a registered name) or algo (an algorithm of this file), not both")
	case p.CC == "" && p.Algo == "":
		v.bad(f+".cc", "missing: the congestion control to give the cgroup (cc: NAME, or algo: ALGO of this file)")
	case p.CC != "" && !validCCName.MatchString(p.CC):
		v.bad(f+".cc", "%q is not a congestion control name (1 to 15 characters of a-z, 0-9, '_' and '-')", p.CC)
	case p.Algo != "":
		if _, err := cc.Lookup(p.Algo); err != nil {
			v.bad(f+".algo", "%v", err)
		} else if n := byAlgo[p.Algo]; len(n) == 0 {
			v.bad(f+".algo", "%q is not in this file's algorithms list; add it there, or name a registered congestion control with cc:", p.Algo)
		} else if len(n) > 1 {
			v.bad(f+".algo", "%q is loaded under several names (%s): say which with cc:", p.Algo, strings.Join(n, ", "))
		}
	}
}

// metricsAndEvents checks the metrics endpoint and the watched namespaces.
func (v *validation) metricsAndEvents(m Metrics, e Events) {
	if m.ListenAddress != "" {
		if err := metrics.CheckListenAddress(m.ListenAddress, m.AllowRemote); err != nil {
			v.bad("metrics.listen_address", "%v", err)
		}
	}
	if m.MaxSubflows != nil && (*m.MaxSubflows < 0 || *m.MaxSubflows > 1<<20) {
		v.bad("metrics.max_subflows", "%d is out of range (0 to %d; 0 exports the aggregates only)", *m.MaxSubflows, 1<<20)
	}
	for i, n := range e.Namespaces {
		if netns.CheckName(n) != nil {
			v.bad(fmt.Sprintf("events.namespaces[%d]", i), "%q is not a network namespace name (as `ip netns list` shows them)", n)
		}
	}
}

// Bounds of the pathctl section.
const (
	minPathPeriod     = 10 * time.Millisecond
	maxPathPeriod     = time.Minute
	maxPathConns      = 65536
	defaultPathConns  = 64
	defaultPathPeriod = 500 * time.Millisecond
)

// pathctl checks the path controller's section.
func (v *validation) pathctl(p Pathctl) {
	how, err := pathctl.ParseApply(p.Apply)
	if err != nil {
		v.bad("pathctl.apply", "%v", err)
	}
	if _, err := pathctl.ParseOnStall(p.OnStall, how); err != nil {
		v.bad("pathctl.on_stall", "%v", err)
	}
	if _, err := pathctl.ParsePrefer(p.Prefer); err != nil {
		v.bad("pathctl.prefer", "%v", err)
	}
	if p.Period != 0 && (p.Period < minPathPeriod || p.Period > maxPathPeriod) {
		v.bad("pathctl.period", "%v is out of range (%v to %v)", p.Period, minPathPeriod, maxPathPeriod)
	}
	if p.MaxConnections < 0 || p.MaxConnections > maxPathConns {
		v.bad("pathctl.max_connections", "%d is out of range (1 to %d; leave it out for %d)", p.MaxConnections, maxPathConns, defaultPathConns)
	}
	seen := map[string]int{}
	for i, n := range p.Namespaces {
		f := fmt.Sprintf("pathctl.namespaces[%d]", i)
		if netns.CheckName(n) != nil {
			v.bad(f, "%q is not a network namespace name (as `ip netns list` shows them; own_netns is the daemon's own)", n)
		} else if j, dup := seen[n]; dup {
			v.bad(f, "%q is also pathctl.namespaces[%d]", n, j)
		}
		seen[n] = i
	}
	if p.Enabled && p.OwnNetns != nil && !*p.OwnNetns && len(p.Namespaces) == 0 {
		v.bad("pathctl", "enabled, but controls no namespace: own_netns is false and namespaces is empty")
	}
	for i, d := range p.Peers {
		if _, err := parseDst(d); err != nil {
			v.bad(fmt.Sprintf("pathctl.peers[%d]", i), "%v", err)
		}
	}
	for i, port := range p.Ports {
		if port == 0 {
			v.bad(fmt.Sprintf("pathctl.ports[%d]", i), "0 is no port: give the service port (1 to 65535)")
		}
	}
	if p.StateDir != "" && !path.IsAbs(p.StateDir) {
		v.bad("pathctl.state_dir", "%q is not an absolute path", p.StateDir)
	}
}

// parseDst accepts a prefix (10.0.0.0/8, 2001:db8::/32) or a single address.
func parseDst(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is neither an address nor a prefix (e.g. 10.0.0.0/8)", s)
		}
		return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a prefix (e.g. 10.0.0.0/8): %v", s, err)
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("%q has host bits set; did you mean %s?", s, p.Masked())
	}
	return p, nil
}
