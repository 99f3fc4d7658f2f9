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
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
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
	// Adopt says what the daemon does with a configured algorithm or
	// scheduler that is already loaded by another build of mptcp-cc (an
	// earlier version, or one that recorded no build): keep (default) runs
	// on with the pinned build and warns; upgrade replaces its programs
	// with this binary's (cc.Upgrade in place, sched.Upgrade re-registered:
	// connections already open keep the old ones).
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

// paramInput is the entry's parameters as given: rsf_target 0 (or left
// out) is the default.
func (a Algorithm) paramInput() cc.ParamInput {
	return cc.ParamInput{Algo: a.Algo, LISA: a.LISA, Trace: a.Trace, Pacing: a.Pacing,
		RSFTarget: a.RSFTarget, RSFTargetSet: a.RSFTarget != 0, AllowUnread: true}
}

// Params are the load-time parameters of a valid entry (cc.ParseParams).
func (a Algorithm) Params() cc.Params {
	p, _ := cc.ParseParams(a.paramInput()) // checked with the configuration
	return p
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
