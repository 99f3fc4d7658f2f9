// SPDX-License-Identifier: Apache-2.0

// Package daemon is `mptcp-cc serve`: it loads the configured congestion
// controls (adopting those a previous run left pinned), attaches the
// per-cgroup policies, serves Prometheus metrics built from the BPF maps at
// scrape time, follows the path manager's events, and on SIGTERM either
// leaves everything in place or removes what its configuration names.
//
// docs/daemon.md is the user's reference for the configuration file.
package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path"
	"reflect"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mptcp-cc/mptcp-cc/internal/strictyaml"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

// OnExit says what the daemon does with what it set up when it is told to stop.
type OnExit string

// OnExit values.
const (
	// OnExitKeep leaves every configured algorithm loaded and every policy
	// attached: new connections keep getting them while no daemon runs,
	// and the next start adopts them.
	OnExitKeep OnExit = "keep"
	// OnExitRemove detaches the configured policies and unloads the
	// configured algorithms (adopted ones included). Connections running
	// them are not disturbed: the kernel keeps a CC until its last socket
	// closes.
	OnExitRemove OnExit = "remove"
)

// Adopt says what the daemon does with an algorithm another build loaded.
type Adopt string

// Adopt values.
const (
	AdoptKeep    Adopt = "keep"
	AdoptUpgrade Adopt = "upgrade"
)

// Config is the daemon's configuration file. Zero values mean "the default";
// Resolve fills them in.
type Config struct {
	// BPFFS is the pin root of the algorithms (default /sys/fs/bpf/mptcp-cc).
	BPFFS string `yaml:"bpffs,omitempty"`
	// PolicyBPFFS is the pin root of the policies (default: BPFFS's
	// sibling <BPFFS>-policy, i.e. /sys/fs/bpf/mptcp-cc-policy).
	PolicyBPFFS string `yaml:"policy_bpffs,omitempty"`
	// SchedBPFFS is the pin root of the packet schedulers (default:
	// BPFFS's sibling <BPFFS>-sched, i.e. /sys/fs/bpf/mptcp-cc-sched).
	SchedBPFFS string `yaml:"sched_bpffs,omitempty"`
	// OnExit: keep (default) or remove.
	OnExit OnExit `yaml:"on_exit,omitempty"`
	// Adopt says what the daemon does with a configured algorithm that is
	// already loaded by another build of mptcp-cc (an earlier version, or
	// one that recorded no build): keep (default) runs on with the pinned
	// build and warns; upgrade replaces its programs with this binary's in
	// place (cc.Upgrade: connections already open keep the old ones).
	Adopt      Adopt       `yaml:"adopt,omitempty"`
	Algorithms []Algorithm `yaml:"algorithms,omitempty"`
	Policies   []Policy    `yaml:"policies,omitempty"`
	// Schedulers are the packet schedulers to keep loaded (a kernel with
	// the BPF scheduler hook only).
	Schedulers []Scheduler `yaml:"schedulers,omitempty"`
	// NetnsSchedulers give network namespaces a scheduler for their new
	// MPTCP connections.
	NetnsSchedulers []NetnsScheduler `yaml:"netns_schedulers,omitempty"`
	Metrics         Metrics          `yaml:"metrics,omitempty"`
	Events          Events           `yaml:"events,omitempty"`
	// Pathctl runs the path controller (pkg/pathctl) on MPTCP connections.
	Pathctl Pathctl `yaml:"pathctl,omitempty"`
}

// Pathctl configures the path controller: one controller per matching
// MPTCP connection, from when it is established until it closes.
type Pathctl struct {
	// Enabled (default false) turns it on: it changes how connections
	// send, so it is never on by default.
	Enabled bool `yaml:"enabled,omitempty"`
	// OwnNetns (default true) controls the connections of the daemon's
	// own network namespace.
	OwnNetns *bool `yaml:"own_netns,omitempty"`
	// Namespaces are further named network namespaces (ip netns).
	Namespaces []string `yaml:"namespaces,omitempty"`
	// Apply is how flags reach the kernel: auto (default), connection or
	// endpoint (pathctl.Apply).
	Apply string `yaml:"apply,omitempty"`
	// Period is the sampling period (default 500ms).
	Period time.Duration `yaml:"period,omitempty"`
	// OnStall is the answer to a stalled subflow: flag (default) or
	// reset (pathctl.Config.ResetStalled; per connection only).
	OnStall string `yaml:"on_stall,omitempty"`
	// Peeks (default true): in best-path mode the controller peeks at
	// backup paths (clears a flag for about one of the path's round trips)
	// to notice one that recovered. Per endpoint, a peek lets every
	// connection on that endpoint use the path meanwhile; false runs a
	// multipath trial at every hold's end instead.
	Peeks *bool `yaml:"peeks,omitempty"`
	// Prefer says who takes a tie between the modes: goodput (default;
	// the held mode) or latency (best-path mode; pathctl.ParsePrefer).
	Prefer string `yaml:"prefer,omitempty"`
	// MaxConnections bounds the connections controlled at once (default
	// 64); those beyond wait for a free slot.
	MaxConnections int `yaml:"max_connections,omitempty"`
	// Peers, if set, restricts control to connections whose peer address
	// (the initial subflow's remote address) is in one of these prefixes.
	Peers []string `yaml:"peers,omitempty"`
	// Ports, if set, restricts control to connections whose initial
	// subflow has one of these ports at either end (the service port,
	// whichever side opened the connection).
	Ports []uint16 `yaml:"ports,omitempty"`
	// StateDir is where the daemon publishes what it controls for
	// `mptcp-cc top` (default /run/mptcp-cc/pathctl).
	StateDir string `yaml:"state_dir,omitempty"`
}

// Scheduler is one packet scheduler to keep loaded.
type Scheduler struct {
	// Name registered with the kernel (default: the scheduler's own
	// name); what net.mptcp.scheduler and netns_schedulers select.
	Name string `yaml:"name,omitempty"`
	// Algo is one of this build's schedulers (pkg/sched).
	Algo  string `yaml:"algo"`
	Trace bool   `yaml:"trace,omitempty"`
	// Args are the scheduler's tunables by index (at most 6; 0 keeps its
	// default; its bpf/sched file lists them).
	Args []uint32 `yaml:"args,omitempty"`
}

// Params are the load-time parameters of the entry.
func (s Scheduler) Params() sched.Params {
	p := sched.Params{Trace: s.Trace}
	copy(p.Args[:], s.Args)
	return p
}

// NetnsScheduler gives a network namespace's new MPTCP connections a
// scheduler (net.mptcp.scheduler).
type NetnsScheduler struct {
	// Netns is a named network namespace (ip netns); empty: the daemon's own.
	Netns string `yaml:"netns,omitempty"`
	// Scheduler is a registered scheduler: a name of this file's
	// schedulers, or one the kernel has ("default").
	Scheduler string `yaml:"scheduler"`
}

// Algorithm is one congestion control to keep loaded.
type Algorithm struct {
	// Name registered with the kernel (default mptcp_<algo>); what
	// sockets and policies select.
	Name      string        `yaml:"name,omitempty"`
	Algo      string        `yaml:"algo"`
	LISA      bool          `yaml:"lisa,omitempty"`
	RSFTarget time.Duration `yaml:"rsf_target,omitempty"` // default 10ms
	Trace     bool          `yaml:"trace,omitempty"`
	Pacing    bool          `yaml:"pacing,omitempty"`
}

// Params are the load-time parameters of the entry.
func (a Algorithm) Params() cc.Params {
	return cc.Params{LISA: a.LISA, RSFTarget: a.RSFTarget, Trace: a.Trace, Pacing: a.Pacing}
}

// Policy gives the processes of a cgroup (and its descendants) a
// congestion control for the connections they open.
type Policy struct {
	// Cgroup is a cgroup v2 directory: absolute, or relative to the
	// cgroup v2 mount.
	Cgroup string `yaml:"cgroup"`
	// CC is a registered congestion control name ("mptcp_olia", "cubic").
	CC string `yaml:"cc,omitempty"`
	// Algo names an algorithm of this file's algorithms list instead of CC.
	Algo string `yaml:"algo,omitempty"`
	// Dst restricts the rule to destinations in this prefix.
	Dst string `yaml:"dst,omitempty"`
	// DstPort restricts the rule to this destination port.
	DstPort uint16 `yaml:"dst_port,omitempty"`
	// TCP applies the rule to plain TCP connections too (default: MPTCP only).
	TCP bool `yaml:"tcp,omitempty"`
	// DelackMax caps the delayed-ACK timer of the sockets the rule
	// matches (policy.Rule.DelackMax; 0: the kernel's): on a receiver of
	// MPTCP traffic, how long a subflow's ACK can be held.
	DelackMax time.Duration `yaml:"delack_max,omitempty"`
}

// Metrics configure the Prometheus endpoint.
type Metrics struct {
	ListenAddress string `yaml:"listen_address,omitempty"` // default 127.0.0.1:9464
	AllowRemote   bool   `yaml:"allow_remote,omitempty"`
	MaxSubflows   *int   `yaml:"max_subflows,omitempty"` // default 4096; 0: aggregates only
}

// Events configure the mptcp_pm event subscription.
type Events struct {
	// Enabled (default true) subscribes to the path manager's events in the
	// daemon's network namespace and in Namespaces.
	Enabled *bool `yaml:"enabled,omitempty"`
	// Namespaces are further named network namespaces (ip netns) to watch.
	Namespaces []string `yaml:"namespaces,omitempty"`
}

// MaxConfigBytes bounds the size of a configuration file.
const MaxConfigBytes = 1 << 20

// Problem is one thing wrong with a configuration: its line (0 when
// unknown), its field (e.g. algorithms[1].algo; "" for the whole file) and
// what is wrong.
type Problem = strictyaml.Problem

// ConfigError lists every problem found in a configuration.
type ConfigError struct {
	File     string // "" when the config did not come from a file
	Problems []Problem
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	prefix := "config"
	if e.File != "" {
		prefix = e.File
	}
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(prefix)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
		if p.Field != "" {
			b.WriteString(p.Field)
			b.WriteString(": ")
		}
		b.WriteString(p.Msg)
	}
	return b.String()
}

// ParseConfig decodes and validates a configuration file. Unknown fields,
// wrong types and invalid values are errors (a *ConfigError naming the field
// and line of each problem). The result is not yet Resolved.
func ParseConfig(data []byte) (Config, error) { return ParseConfigWith(data, nil) }

// ParseConfigWith is ParseConfig with override applied (command-line flags)
// between decoding and validation.
func ParseConfigWith(data []byte, override func(*Config)) (Config, error) {
	var cfg Config
	if len(data) > MaxConfigBytes {
		return cfg, &ConfigError{Problems: []Problem{{Msg: fmt.Sprintf("the file is %d bytes; a configuration is at most %d", len(data), MaxConfigBytes)}}}
	}
	root, probs := strictyaml.Parse(data)
	if len(probs) > 0 {
		return cfg, &ConfigError{Problems: probs}
	}
	empty := len(root.Content) == 0 || root.Content[0].Kind == yaml.ScalarNode && root.Content[0].Tag == "!!null"
	if !empty && root.Content[0].Kind != yaml.MappingNode {
		return cfg, &ConfigError{Problems: []Problem{{Line: root.Content[0].Line, Msg: "the configuration must be a mapping (key: value lines), e.g. `algorithms: [{algo: olia}]`"}}}
	}
	if !empty {
		if probs, _ := configDecoder.Decode(root, "", &cfg); len(probs) > 0 {
			return Config{}, &ConfigError{Problems: probs}
		}
	}
	// An empty list and an absent one mean the same.
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = nil
	}
	if len(cfg.Policies) == 0 {
		cfg.Policies = nil
	}
	if len(cfg.Events.Namespaces) == 0 {
		cfg.Events.Namespaces = nil
	}
	if len(cfg.Schedulers) == 0 {
		cfg.Schedulers = nil
	}
	if len(cfg.NetnsSchedulers) == 0 {
		cfg.NetnsSchedulers = nil
	}
	if len(cfg.Pathctl.Namespaces) == 0 {
		cfg.Pathctl.Namespaces = nil
	}
	if len(cfg.Pathctl.Peers) == 0 {
		cfg.Pathctl.Peers = nil
	}
	if len(cfg.Pathctl.Ports) == 0 {
		cfg.Pathctl.Ports = nil
	}
	if override != nil {
		override(&cfg)
	}
	if probs := cfg.validate(); len(probs) > 0 {
		for i := range probs {
			if probs[i].Line == 0 {
				probs[i].Line = strictyaml.Line(root, probs[i].Field)
			}
		}
		return Config{}, &ConfigError{Problems: probs}
	}
	return cfg, nil
}

// ReadConfigFile reads and parses a configuration file (ParseConfigWith);
// a *ConfigError names the file. It is what the daemon reads at start and
// at every reload, so both refuse a file with the same messages as
// --config.check.
func ReadConfigFile(file string, override func(*Config)) (Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Config{}, fmt.Errorf("reading the configuration: %w", err)
	}
	cfg, err := ParseConfigWith(data, override)
	var ce *ConfigError
	if errors.As(err, &ce) {
		ce.File = file
	}
	return cfg, err
}

// Validate checks a configuration that did not come from a file (or was
// changed by flags after parsing).
func (c Config) Validate() error {
	if probs := c.validate(); len(probs) > 0 {
		return &ConfigError{Problems: probs}
	}
	return nil
}

// configDecoder says what the one field whose Go type says too little is;
// an empty section (metrics: with nothing under it) is fine.
var configDecoder = strictyaml.Decoder{Types: map[reflect.Type]string{
	reflect.TypeOf(uint16(0)): "a port number (0 to 65535)",
}, AllowNull: true}

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
		if a.RSFTarget < 0 || a.RSFTarget > time.Hour {
			v.bad(f+".rsf_target", "%v is out of range (0 to 1h)", a.RSFTarget)
		} else if a.RSFTarget > 0 && a.RSFTarget < time.Microsecond {
			v.bad(f+".rsf_target", "%v is below the microsecond resolution of the parameter", a.RSFTarget)
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
		if a.RSFTarget == 0 {
			a.RSFTarget = cc.DefaultRSFTarget
		}
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

// Marshal encodes the configuration as YAML (for `serve --config.check -v`
// and the fuzz round trip).
func (c Config) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}
