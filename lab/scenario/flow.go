// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"errors"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mptcp-cc/mptcp-cc/internal/mahimahi"
	"github.com/mptcp-cc/mptcp-cc/lab/linkem"
	"github.com/mptcp-cc/mptcp-cc/pkg/algo"
	"github.com/mptcp-cc/mptcp-cc/pkg/ccparams"
	_ "github.com/mptcp-cc/mptcp-cc/pkg/model" // our congestion controls register there
)

// ours lists, sorted, the congestion controls of this project a scenario
// may name: pkg/algo's table (pure Go: no BPF object comes with it).
func ours() []string {
	n := algo.Names(algo.CC)
	sort.Strings(n)
	return n
}

func resolveLink(e *errList, name string, rl rawLink, n *yaml.Node, p, dir string) Link {
	l := Link{Name: name}
	parseField(e, n, p, "rate", rl.Rate, ParseRate, &l.Rate)
	parseField(e, n, p, "delay", rl.Delay, ParseDuration, &l.Delay)
	parseField(e, n, p, "jitter", rl.Jitter, ParseDuration, &l.Jitter)
	parseField(e, n, p, "loss", rl.Loss, ParseProb, &l.Loss)
	parseField(e, n, p, "queue", rl.Queue, ParseQueue, &l.Queue)
	if rl.Trace != "" {
		t := rl.Trace
		if !filepath.IsAbs(t) {
			t = filepath.Join(dir, t)
		}
		if _, err := mahimahi.Load(t); err != nil {
			e.add(fieldNode(n, "trace"), p+".trace", "%v", err)
		}
		l.Trace = t
		if l.Rate != 0 {
			e.add(fieldNode(n, "rate"), p+".rate", "a link has a rate or a trace, not both")
		}
	}
	if l.Queue.BDP > 0 && l.Rate == 0 {
		e.add(fieldNode(n, "queue"), p+".queue", "a queue in BDPs needs a rate")
	}
	if rl.AQM != nil {
		l.AQM = resolveAQM(e, *rl.AQM, fieldNode(n, "aqm"), p+".aqm")
		if l.AQM.Kind != linkem.DropTail && l.Rate == 0 && l.Trace == "" {
			e.add(fieldNode(n, "aqm"), p+".aqm", "an AQM needs a rate or a trace: without a bottleneck nothing queues")
		}
	}
	return l
}

func resolveFlow(e *errList, s *Scenario, name string, rf rawFlow, n *yaml.Node, p string, hosts, servers map[string]int) Flow {
	f := Flow{Name: name, From: rf.From, To: rf.To, Tool: rf.Tool, Count: rf.Count, Path: rf.Path, IperfArgs: rf.IperfArgs}
	hostOK := resolveEnds(e, &f, rf, n, p, hosts, servers)
	resolveTransport(e, &f, rf, n, p)
	if hostOK && f.Host < len(s.Hosts) {
		if np := len(s.Hosts[f.Host].Paths); f.Path < 0 || f.Path >= np {
			e.add(fieldNode(n, "path"), p+".path", "%d: host %s has paths 0 to %d", f.Path, f.From, np-1)
		}
	}
	resolveAmount(e, &f, rf, n, p, s.Record.Warmup)
	f.CC = parseCC(e, fieldNode(n, "cc"), &rf.CC, p+".cc", f.Tool)
	return f
}

// resolveEnds finds the flow's host and server (the only one of either may
// go unnamed). It reports whether the host is known.
func resolveEnds(e *errList, f *Flow, rf rawFlow, n *yaml.Node, p string, hosts, servers map[string]int) bool {
	hostOK := true
	var ok bool
	if f.Host, ok = hosts[rf.From]; !ok {
		if rf.From == "" && len(hosts) == 1 {
			f.From, f.Host = keys(hosts)[0], 0
		} else {
			hostOK = false
			e.add(fieldNode(n, "from"), p+".from", "host %q is not defined (hosts: %s)", rf.From, strings.Join(keys(hosts), ", "))
		}
	}
	if f.Server, ok = servers[rf.To]; !ok {
		if rf.To == "" && len(servers) == 1 {
			f.To, f.Server = keys(servers)[0], 0
		} else {
			e.add(fieldNode(n, "to"), p+".to", "server %q is not defined (servers: %s)", rf.To, strings.Join(keys(servers), ", "))
		}
	}
	return hostOK
}

// resolveTransport checks the protocol, the tool and the connection count.
func resolveTransport(e *errList, f *Flow, rf rawFlow, n *yaml.Node, p string) {
	switch rf.Protocol {
	case "", "mptcp":
		f.MPTCP = true
	case "tcp":
	default:
		e.add(fieldNode(n, "protocol"), p+".protocol", "%q: want mptcp or tcp", rf.Protocol)
	}
	switch f.Tool {
	case "":
		f.Tool = "xfer"
	case "xfer", "iperf3":
	default:
		e.add(fieldNode(n, "tool"), p+".tool", "%q: want xfer (the lab's own, in-process) or iperf3", f.Tool)
	}
	if len(f.IperfArgs) > 0 && f.Tool != "iperf3" {
		e.add(fieldNode(n, "iperf3_args"), p+".iperf3_args", "only for tool: iperf3")
	}
	switch {
	case f.Count == 0:
		f.Count = 1
	case f.Count < 0 || f.Count > 256:
		e.add(fieldNode(n, "count"), p+".count", "%d: want 1 to 256 connections per host instance", f.Count)
	}
}

// resolveAmount resolves when the flow starts, how much it sends (bytes
// or duration) and its timeout.
func resolveAmount(e *errList, f *Flow, rf rawFlow, n *yaml.Node, p string, warmup time.Duration) {
	parseField(e, n, p, "start", rf.Start, ParseDuration, &f.Start)
	switch {
	case rf.Bytes != "" && rf.Duration != "":
		e.add(fieldNode(n, "bytes"), p, "give bytes or duration, not both")
	case rf.Bytes != "":
		if parseField(e, n, p, "bytes", rf.Bytes, ParseSize, &f.Bytes) && f.Bytes <= 0 {
			e.add(fieldNode(n, "bytes"), p+".bytes", "must be positive")
		}
	case rf.Duration != "":
		if !parseField(e, n, p, "duration", rf.Duration, ParseDuration, &f.Duration) {
			break
		}
		if f.Duration <= 0 {
			e.add(fieldNode(n, "duration"), p+".duration", "must be positive")
		} else if warmup >= f.Duration {
			e.add(fieldNode(n, "duration"), p+".duration", "%v is not longer than record.warmup (%v): nothing would be measured", f.Duration, warmup)
		}
	default:
		e.add(n, p, "give bytes (e.g. 10MB) or duration (e.g. 30s)")
	}
	switch {
	case rf.Timeout != "":
		parseField(e, n, p, "timeout", rf.Timeout, ParseDuration, &f.Timeout)
	case f.Duration > 0:
		f.Timeout = f.Duration + 30*time.Second
	default:
		f.Timeout = 5 * time.Minute
	}
}

var kernelCCRE = regexp.MustCompile(`^[a-z0-9_-]{1,15}$`)

// parseCC reads "reno", "olia", "olia+lisa", "olia+lisa+pacing", or
// {algo: rsf, lisa: true, pacing: true, rsf_target: 5ms}. The parameters
// of ours are checked by ccparams.Parse, as load's flags and the daemon's
// configuration are.
func parseCC(e *errList, n *yaml.Node, raw *yaml.Node, p, tool string) CCSpec {
	var c CCSpec
	switch raw.Kind {
	case 0:
		e.add(n, p, "required: a kernel congestion control (reno, cubic, ...) or one of ours (%s), optionally +lisa and +pacing", strings.Join(ours(), ", "))
		return c
	case yaml.ScalarNode:
		s := strings.TrimSpace(raw.Value)
		parts := strings.Split(s, "+")
		base, opts := parts[0], parts[1:]
		c = CCSpec{Name: base, Algo: base}
		for _, o := range opts {
			switch o {
			case "lisa":
				c.LISA = true
			case "pacing":
				c.Pacing = true
			default:
				e.add(raw, p, "%q: +%s is not a parameter (+lisa, +pacing)", s, o)
				return CCSpec{}
			}
		}
		if _, err := algo.Lookup(algo.CC, base); err == nil {
			return c
		}
		if len(opts) > 0 {
			e.add(raw, p, "%q: +%s composes with our algorithms only (%s)", s, opts[0], strings.Join(ours(), ", "))
			return CCSpec{}
		}
		if !kernelCCRE.MatchString(s) {
			e.add(raw, p, "%q is not a congestion control name", s)
			return CCSpec{}
		}
		return CCSpec{Name: s}
	case yaml.MappingNode:
		var rc rawCC
		if !e.decode(raw, p, &rc) {
			return c
		}
		if _, err := algo.Lookup(algo.CC, rc.Algo); err != nil {
			e.add(fieldNode(raw, "algo"), p+".algo", "%v", err)
			return c
		}
		c = CCSpec{Name: rc.Algo, Algo: rc.Algo, LISA: rc.LISA, Pacing: rc.Pacing}
		in := ccparams.Input{Algo: rc.Algo, LISA: rc.LISA, Pacing: rc.Pacing}
		if rc.RSFTarget != "" {
			d, err := ParseDuration(rc.RSFTarget)
			if err != nil {
				e.add(fieldNode(raw, "rsf_target"), p+".rsf_target", "%v", err)
				return c
			}
			c.RSFTarget, in.RSFTarget, in.RSFTargetSet = d, d, true
		}
		var pe *ccparams.Error
		if _, err := ccparams.Parse(in); errors.As(err, &pe) {
			e.add(fieldNode(raw, string(pe.Param)), p+"."+string(pe.Param), "%s", pe.Msg)
		}
		return c
	}
	e.add(raw, p, "want a name or a mapping {algo, lisa, pacing, rsf_target}")
	return c
}
