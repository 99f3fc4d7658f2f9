// SPDX-License-Identifier: Apache-2.0

package metrics

// The table: every metric family `mptcp-cc serve` exports, declared once
// with how its value is read. The collectors, the daemon's registry
// (Daemon), the names dashboards and docs are checked against (Names) and
// the descriptors all come from it; nothing else in the tree declares a
// metric. docs/metrics.md documents every entry (pkg/daemon's
// TestMetricNamesDocumented checks name, type and labels).

import (
	"runtime"
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/events"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// Family is one metric family: what Prometheus sees of it, and the one
// function that reads its samples.
type Family struct {
	Name   string
	Help   string
	Type   prometheus.ValueType
	Labels []string

	// How its samples are read: exactly one of these is set, and which
	// one says the family's source (TestFamilies checks it).
	//
	// The BPF maps, read once per scrape by Collector (a stats.Snapshot):
	scrape    func(e emitter, sc *scrape)                    // once per scrape
	algorithm func(l *cc.Loaded, a *algoAgg) float64         // per loaded CC; Labels algoLabels
	subflow   func(s *stats.Subflow) float64                 // per exported subflow; Labels subflowLabels
	subflowX  func(e emitter, s *stats.Subflow, lv []string) // per exported subflow, with more labels or samples (lv: its subflowLabels values)
	scheduler func(e emitter, l *sched.Loaded, s *schedSums) // per loaded packet scheduler
	// The daemon's state, one collector per source (Daemon):
	events  func(e emitter, netns string, t *events.Tracker) // per followed namespace
	policy  func(e emitter, p *PolicyState)
	reloads func(e emitter, r *ReloadState)
	pathctl func(e emitter, p *pathctlReading)
	mib     func(e emitter, netns string, m map[string]uint64) // per namespace read

	idx  int // in families
	desc *prometheus.Desc
}

// emitter hands one family's samples to the sink of a scrape.
type emitter struct {
	out sink
	f   *Family
}

func (e emitter) emit(v float64, lv ...string) { e.out.add(e.f, v, lv...) }

const (
	gauge   = prometheus.GaugeValue
	counter = prometheus.CounterValue
)

var (
	subflowLabels = []string{"cc", "algo", "token", "subflow", "local", "remote"}
	connLabels    = []string{"cc", "algo", "token"}
	algoLabels    = []string{"cc", "algo"}
	schedLabels   = []string{"scheduler", "algo"}
)

func with(base []string, extra ...string) []string {
	return append(append([]string(nil), base...), extra...)
}

// families is the table. Collector writes its families in this order, and a
// subflow's samples in this order too: keep the families that share
// subflowLabels together, so that the text writer formats a subflow's labels
// once for the run of them.
var families = []*Family{
	// Build and scrape.
	{Name: "mptcp_cc_build_info", Type: gauge, Labels: []string{"version", "goversion", "revision"},
		Help:   "Build of the mptcp-cc exporter; the value is always 1.",
		scrape: func(e emitter, _ *scrape) { e.emit(1, Version, runtime.Version(), revision) }},
	{Name: "mptcp_cc_scrape_duration_seconds", Type: gauge,
		Help:   "Time the previous scrape took to read the BPF maps and build the metrics.",
		scrape: func(e emitter, sc *scrape) { e.emit(sc.lastDur.Seconds()) }},
	{Name: "mptcp_cc_scrape_error", Type: gauge,
		Help:   "1 if reading the BPF maps failed (partly or fully) during this scrape, else 0.",
		scrape: func(e emitter, sc *scrape) { e.emit(b2f(sc.err != nil)) }},

	// Per algorithm: every subflow, no bound.
	{Name: "mptcp_cc_algorithms_loaded", Type: gauge,
		Help:   "Congestion controls loaded (pinned) under the exporter's bpffs root.",
		scrape: func(e emitter, sc *scrape) { e.emit(float64(len(sc.snap.Loaded))) }},
	{Name: "mptcp_cc_algorithm_info", Type: gauge, Labels: []string{"cc", "algo", "lisa", "trace"},
		Help: "A loaded congestion control and its load-time parameters; the value is always 1.",
		scrape: func(e emitter, sc *scrape) {
			for _, l := range sc.snap.Loaded {
				e.emit(1, l.Name, l.Algo, strconv.FormatBool(l.Params.LISA), strconv.FormatBool(l.Params.Trace))
			}
		}},
	{Name: "mptcp_cc_algorithm_registered", Type: gauge, Labels: algoLabels,
		Help:      "1 if the kernel lists the congestion control as available, 0 if only its pins are left.",
		algorithm: func(l *cc.Loaded, _ *algoAgg) float64 { return b2f(l.Registered) }},
	{Name: "mptcp_cc_algorithm_rsf_target_seconds", Type: gauge, Labels: algoLabels,
		Help:      "RSF's target queueing delay d as loaded (only RSF reads it).",
		algorithm: func(l *cc.Loaded, _ *algoAgg) float64 { return l.Params.RSFTarget.Seconds() }},
	{Name: "mptcp_cc_algorithm_connections", Type: gauge, Labels: algoLabels,
		Help:      "Connections with at least one live subflow running the congestion control (a plain TCP socket counts as one connection).",
		algorithm: func(_ *cc.Loaded, a *algoAgg) float64 { return float64(len(a.conns) + a.plain) }},
	{Name: "mptcp_cc_algorithm_subflows", Type: gauge, Labels: algoLabels,
		Help:      "Live subflows running the congestion control.",
		algorithm: func(_ *cc.Loaded, a *algoAgg) float64 { return a.subflows }},
	{Name: "mptcp_cc_algorithm_cwnd_segments", Type: gauge, Labels: algoLabels,
		Help:      "Sum of the congestion windows of the live subflows running the congestion control.",
		algorithm: func(_ *cc.Loaded, a *algoAgg) float64 { return a.cwnd }},
	{Name: "mptcp_cc_algorithm_in_flight_segments", Type: gauge, Labels: algoLabels,
		Help:      "Sum of the segments in flight of the live subflows running the congestion control.",
		algorithm: func(_ *cc.Loaded, a *algoAgg) float64 { return a.inflight }},
	{Name: "mptcp_cc_algorithm_pacing_rate_bytes_per_second", Type: gauge, Labels: algoLabels,
		Help:      "Sum of the pacing rates of the live subflows running the congestion control.",
		algorithm: func(_ *cc.Loaded, a *algoAgg) float64 { return a.pacing }},
	{Name: "mptcp_cc_algorithm_untracked_subflows_total", Type: counter, Labels: algoLabels,
		Help:      "Subflows since the congestion control was loaded that found its subflows map full: they ran it, but no series, list or top shows them (mptcp-cc load --max-subflows).",
		algorithm: func(l *cc.Loaded, _ *algoAgg) float64 { return float64(l.Untracked) }},

	// The bound on per-subflow and per-connection series.
	{Name: "mptcp_cc_subflow_series_limit", Type: gauge,
		Help:   "The bound on subflows exported with per-subflow series (--metrics.max-subflows).",
		scrape: func(e emitter, sc *scrape) { e.emit(float64(sc.limit)) }},
	{Name: "mptcp_cc_subflow_series_dropped", Type: gauge,
		Help:   "Live subflows left out of the per-subflow series at this scrape because of the bound.",
		scrape: func(e emitter, sc *scrape) { e.emit(float64(len(sc.subs) - len(sc.exported))) }},
	{Name: "mptcp_cc_connection_series_dropped", Type: gauge,
		Help:   "Connections left out of the per-connection series at this scrape because of the bound.",
		scrape: func(e emitter, sc *scrape) { e.emit(float64(len(sc.allConns) - len(sc.conns))) }},

	// Per connection, bounded. A connection cut by the bound in the middle
	// is exported with the subflows that made it in (its cwnd sum covers
	// those); its subflow count stays complete.
	{Name: "mptcp_cc_connection_subflows", Type: gauge, Labels: connLabels,
		Help: "Live subflows of an MPTCP connection that run the congestion control.",
		scrape: func(e emitter, sc *scrape) {
			for _, a := range sc.conns {
				e.emit(float64(sc.allConns[a.key]), a.key.cc, a.algo, a.token)
			}
		}},
	{Name: "mptcp_cc_connection_cwnd_segments", Type: gauge, Labels: connLabels,
		Help: "Sum of the congestion windows of an MPTCP connection's subflows.",
		scrape: func(e emitter, sc *scrape) {
			for _, a := range sc.conns {
				e.emit(a.cwnd, a.key.cc, a.algo, a.token)
			}
		}},
	{Name: "mptcp_cc_connection_coupled", Type: gauge, Labels: with(connLabels, "quantity"),
		Help: "The algorithm's coupled quantity for the connection (LIA/OLIA/BALIA: alpha, RSF: delay factor), as computed at the most recent update of any of its subflows.",
		scrape: func(e emitter, sc *scrape) {
			for _, a := range sc.conns {
				e.emit(a.coupled, a.key.cc, a.algo, a.token, a.quantity)
			}
		}},

	// Per subflow, bounded. A new one is one entry: subflow reads the
	// value, from a decoded field or straight from the BPF record
	// (s.Record, the generated abi.Subflow).
	{Name: "mptcp_cc_subflow_info", Type: gauge, Labels: with(subflowLabels, "local_id", "remote_id", "backup"),
		Help: "A live subflow; the value is always 1. local_id/remote_id are the path manager's address ids; backup is this side's flag as the kernel has it now (MP_PRIO, endpoint flags).",
		subflowX: func(e emitter, s *stats.Subflow, lv []string) {
			e.emit(1, append(lv, strconv.Itoa(int(s.LocalID)), strconv.Itoa(int(s.RemoteID)), strconv.FormatBool(s.Backup))...)
		}},
	{Name: "mptcp_cc_subflow_cwnd_segments", Type: gauge, Labels: subflowLabels,
		Help:    "Congestion window.",
		subflow: func(s *stats.Subflow) float64 { return float64(s.Cwnd) }},
	{Name: "mptcp_cc_subflow_ssthresh_segments", Type: gauge, Labels: subflowLabels,
		Help:    "Slow-start threshold (+Inf while unset).",
		subflow: func(s *stats.Subflow) float64 { return ssthresh(s.Ssthresh) }},
	{Name: "mptcp_cc_subflow_srtt_seconds", Type: gauge, Labels: subflowLabels,
		Help:    "Smoothed round-trip time.",
		subflow: func(s *stats.Subflow) float64 { return s.SRTT.Seconds() }},
	{Name: "mptcp_cc_subflow_min_rtt_seconds", Type: gauge, Labels: subflowLabels,
		Help:    "Minimum round-trip time seen (the kernel's windowed min).",
		subflow: func(s *stats.Subflow) float64 { return s.MinRTT.Seconds() }},
	{Name: "mptcp_cc_subflow_rttvar_seconds", Type: gauge, Labels: subflowLabels,
		Help:    "Round-trip time variation (mdev).",
		subflow: func(s *stats.Subflow) float64 { return s.RTTVar.Seconds() }},
	{Name: "mptcp_cc_subflow_in_flight_segments", Type: gauge, Labels: subflowLabels,
		Help:    "Segments in flight.",
		subflow: func(s *stats.Subflow) float64 { return float64(s.InFlight) }},
	{Name: "mptcp_cc_subflow_pacing_rate_bytes_per_second", Type: gauge, Labels: subflowLabels,
		Help:    "Pacing rate the kernel computed for the subflow.",
		subflow: func(s *stats.Subflow) float64 { return float64(s.PacingRate) }},
	{Name: "mptcp_cc_subflow_ca_state", Type: gauge, Labels: subflowLabels,
		Help: "Congestion-avoidance state: 0 open, 1 disorder, 2 cwr, 3 recovery, 4 loss.",
		subflowX: func(e emitter, s *stats.Subflow, lv []string) {
			if v, ok := caStateValue[s.CAState]; ok {
				e.emit(v, lv...)
			}
		}},
	{Name: "mptcp_cc_subflow_coupled_paths", Type: gauge, Labels: subflowLabels,
		Help:    "Coupled subflows of the connection seen at the subflow's last window increase.",
		subflow: func(s *stats.Subflow) float64 { return float64(s.Paths) }},
	{Name: "mptcp_cc_subflow_coupled", Type: gauge, Labels: with(subflowLabels, "quantity"),
		Help:     "The algorithm's coupled quantity computed at the subflow's last update.",
		subflowX: func(e emitter, s *stats.Subflow, lv []string) { e.emit(s.Coupled, append(lv, quantity(s))...) }},
	{Name: "mptcp_cc_subflow_delivered_segments_total", Type: counter, Labels: subflowLabels,
		Help:    "Segments delivered (acknowledged) on the subflow.",
		subflow: func(s *stats.Subflow) float64 { return float64(s.Delivered) }},
	{Name: "mptcp_cc_subflow_lost_segments_total", Type: counter, Labels: subflowLabels,
		Help:    "Segments the subflow marked lost.",
		subflow: func(s *stats.Subflow) float64 { return float64(s.Lost) }},
	{Name: "mptcp_cc_subflow_retransmitted_segments_total", Type: counter, Labels: subflowLabels,
		Help:    "Segments the subflow retransmitted.",
		subflow: func(s *stats.Subflow) float64 { return float64(s.Retrans) }},
	{Name: "mptcp_cc_subflow_acked_bytes_total", Type: counter, Labels: subflowLabels,
		Help:    "Bytes acknowledged on the subflow.",
		subflow: func(s *stats.Subflow) float64 { return float64(s.BytesAcked) }},
	{Name: "mptcp_cc_subflow_sent_bytes_total", Type: counter, Labels: subflowLabels,
		Help:    "Bytes sent on the subflow, retransmissions included.",
		subflow: func(s *stats.Subflow) float64 { return float64(s.BytesSent) }},
	{Name: "mptcp_cc_subflow_lisa_given_segments", Type: gauge, Labels: subflowLabels,
		Help:    "Window segments the subflow gave to joining siblings (LISA).",
		subflow: func(s *stats.Subflow) float64 { return float64(s.LISAGiven) }},
	{Name: "mptcp_cc_subflow_lisa_taken_segments", Type: gauge, Labels: subflowLabels,
		Help:    "Window segments the subflow took from a sibling when it joined (LISA).",
		subflow: func(s *stats.Subflow) float64 { return float64(s.LISATaken) }},
	{Name: "mptcp_cc_subflow_window_repairs_total", Type: counter, Labels: subflowLabels,
		Help:    "Implausible kernel-stored windows the congestion control replaced (see docs/algorithms.md, the window guard).",
		subflow: func(s *stats.Subflow) float64 { return float64(s.Repairs) }},

	// Packet schedulers: per scheduler, the sums cover every subflow its
	// LRU counter map holds, so they only fall when more subflows than the
	// map holds push old ones out.
	{Name: "mptcp_cc_schedulers_loaded", Type: gauge,
		Help:   "Packet schedulers loaded (pinned) under the exporter's scheduler pin root.",
		scrape: func(e emitter, sc *scrape) { e.emit(float64(len(sc.snap.Schedulers))) }},
	{Name: "mptcp_cc_scheduler_info", Type: gauge, Labels: []string{"scheduler", "algo", "trace", "args"},
		Help: "A loaded packet scheduler and its load-time parameters (args: its six tunables, 0 = the default); the value is always 1.",
		scheduler: func(e emitter, l *sched.Loaded, _ *schedSums) {
			e.emit(1, l.Name, l.Algorithm, strconv.FormatBool(l.Params.Trace), schedArgs(l.Params.Args))
		}},
	{Name: "mptcp_cc_scheduler_registered", Type: gauge, Labels: schedLabels,
		Help:      "1 if the kernel lists the packet scheduler in net.mptcp.available_schedulers, 0 if only its pins are left.",
		scheduler: func(e emitter, l *sched.Loaded, _ *schedSums) { e.emit(b2f(l.Registered), l.Name, l.Algorithm) }},
	{Name: "mptcp_cc_scheduler_decisions_total", Type: counter, Labels: with(schedLabels, "kind"),
		Help: "Subflows the scheduler's decisions picked, by kind (send: new data, retrans: a reinjection; a decision that picks two subflows counts twice), over every subflow its counter map holds, closed ones included until they age out of it.",
		scheduler: func(e emitter, l *sched.Loaded, s *schedSums) {
			e.emit(s.sends, l.Name, l.Algorithm, "send")
			e.emit(s.retrans, l.Name, l.Algorithm, "retrans")
		}},
	{Name: "mptcp_cc_scheduler_burst_bytes_total", Type: counter, Labels: schedLabels,
		Help:      "Bytes of burst the scheduler granted its picks, over every subflow its counter map holds.",
		scheduler: func(e emitter, l *sched.Loaded, s *schedSums) { e.emit(s.burst, l.Name, l.Algorithm) }},
	{Name: "mptcp_cc_netns_scheduler_info", Type: gauge, Labels: []string{"netns", "scheduler"},
		Help: "The packet scheduler a network namespace gives new MPTCP connections (net.mptcp.scheduler; netns=\"host\" is the exporter's own); the value is always 1.",
		scrape: func(e emitter, sc *scrape) {
			for _, n := range sc.snap.Netns {
				e.emit(1, nsLabel(n.Netns), n.Scheduler)
			}
		}},
	{Name: "mptcp_cc_subflow_scheduler_decisions_total", Type: counter, Labels: with(subflowLabels, "scheduler", "kind"),
		Help: "Decisions of the loaded packet scheduler that picked the subflow, by kind (send: new data, retrans: a reinjection).",
		subflowX: func(e emitter, s *stats.Subflow, lv []string) {
			if sc := s.Sched; sc != nil {
				e.emit(float64(sc.Sends), append(lv, sc.Name, "send")...)
				e.emit(float64(sc.Retrans), append(lv, sc.Name, "retrans")...)
			}
		}},
	{Name: "mptcp_cc_subflow_scheduler_burst_bytes_total", Type: counter, Labels: with(subflowLabels, "scheduler"),
		Help: "Bytes of burst the loaded packet scheduler granted the subflow when it picked it.",
		subflowX: func(e emitter, s *stats.Subflow, lv []string) {
			if sc := s.Sched; sc != nil {
				e.emit(float64(sc.BurstBytes), append(lv, sc.Name)...)
			}
		}},

	// The path manager's events (pkg/events), per followed namespace.
	{Name: "mptcp_cc_pm_events_total", Type: counter, Labels: []string{"netns", "type"},
		Help: "mptcp_pm netlink events received, by network namespace and event type.",
		events: func(e emitter, netns string, t *events.Tracker) {
			byName := map[string]uint64{}
			for _, k := range events.KnownTypes { // exported from zero, not from the first event
				byName[k.String()] = 0
			}
			for k, v := range t.Counts() {
				byName[k.String()] = v
			}
			types := make([]string, 0, len(byName))
			for k := range byName {
				types = append(types, k)
			}
			sort.Strings(types)
			for _, typ := range types {
				e.emit(float64(byName[typ]), netns, typ)
			}
		}},
	{Name: "mptcp_cc_pm_connections", Type: gauge, Labels: []string{"netns"},
		Help:   "Open MPTCP connections the path manager's events reported (those created before the daemon subscribed are counted once one of their events arrives).",
		events: func(e emitter, netns string, t *events.Tracker) { e.emit(float64(t.OpenCount()), netns) }},
	{Name: "mptcp_cc_pm_event_overruns_total", Type: counter, Labels: []string{"netns"},
		Help:   "Times the kernel dropped mptcp_pm events because the daemon's receive buffer was full.",
		events: func(e emitter, netns string, t *events.Tracker) { e.emit(float64(t.Overruns()), netns) }},

	// The daemon's per-cgroup policies.
	{Name: "mptcp_cc_policy_rule_info", Type: gauge, Labels: []string{"cgroup", "cc", "dst", "dst_port", "tcp"},
		Help: "A per-cgroup policy rule the daemon keeps in force; the value is always 1.",
		policy: func(e emitter, p *PolicyState) {
			for _, r := range p.Rules {
				e.emit(1, r.Cgroup, r.CC, r.Dst, strconv.Itoa(int(r.DstPort)), strconv.FormatBool(r.PlainTCP))
			}
		}},
	{Name: "mptcp_cc_policy_errors_total", Type: counter, Labels: []string{"cgroup"},
		Help: "Sockets whose congestion control (or delayed-ACK cap) a cgroup's policy program failed to set (bpf_setsockopt failed, e.g. the CC was unloaded).",
		policy: func(e emitter, p *PolicyState) {
			for _, c := range p.Counters {
				e.emit(float64(c.Errors), c.Cgroup)
			}
		}},
	{Name: "mptcp_cc_policy_delack_capped_total", Type: counter, Labels: []string{"cgroup"},
		Help: "Sockets whose delayed-ACK timer a cgroup's policy rule capped (delack_max).",
		policy: func(e emitter, p *PolicyState) {
			for _, c := range p.Counters {
				e.emit(float64(c.Delack), c.Cgroup)
			}
		}},

	// The daemon's configuration reloads.
	{Name: "mptcp_cc_config_reloads_total", Type: counter, Labels: []string{"result"},
		Help: "Configuration reloads (SIGHUP, systemctl reload) by result: success, or failure (refused, or applied with a removal that failed).",
		reloads: func(e emitter, r *ReloadState) {
			e.emit(float64(r.Success), "success")
			e.emit(float64(r.Failure), "failure")
		}},
	{Name: "mptcp_cc_config_last_reload_success_timestamp_seconds", Type: gauge,
		Help:    "When the configuration in force was applied in full (the start, or the last successful reload), in seconds since the Unix epoch.",
		reloads: func(e emitter, r *ReloadState) { e.emit(float64(r.LastSuccess.UnixNano()) / 1e9) }},
	{Name: "mptcp_cc_config_last_reload_successful", Type: gauge,
		Help:    "1 if the last reload (or the start, before any) succeeded, 0 if it failed.",
		reloads: func(e emitter, r *ReloadState) { e.emit(b2f(r.LastOK)) }},

	// The daemon's path controllers (pkg/pathctl): every namespace, mode,
	// target and cause from zero, so rate() and absent() work from the start.
	{Name: "mptcp_cc_pathctl_connections", Type: gauge, Labels: []string{"netns", "mode"},
		Help: "MPTCP connections the daemon's path controller controls, by network namespace and mode (multipath, best-path, or trial while either is tried).",
		pathctl: func(e emitter, r *pathctlReading) {
			for _, n := range r.nss {
				for _, m := range PathctlModes {
					e.emit(float64(r.count[pathctlSwitch{ns: n, to: m}]), nsLabel(n), m)
				}
			}
		}},
	{Name: "mptcp_cc_pathctl_switches_total", Type: counter, Labels: []string{"netns", "to", "cause"},
		Help: "Decisions of the path controller that switched a connection's mode or ended a trial, by the mode they put it in and why (docs/metrics.md lists the causes).",
		pathctl: func(e emitter, r *pathctlReading) {
			for _, n := range r.nss {
				for _, to := range PathctlTargets {
					for _, c := range pathctl.Causes {
						e.emit(float64(r.p.switches[pathctlSwitch{n, to, c}]), nsLabel(n), to, c)
					}
				}
			}
		}},
	{Name: "mptcp_cc_pathctl_apply_errors_total", Type: counter, Labels: []string{"netns"},
		Help: "Requests to set or clear a backup flag that the kernel refused (not repeated while the decision stands).",
		pathctl: func(e emitter, r *pathctlReading) {
			for _, n := range r.nss {
				e.emit(float64(r.p.applyErr[n]), nsLabel(n))
			}
		}},
	{Name: "mptcp_cc_pathctl_skipped_total", Type: counter,
		Help:    "MPTCP connections that matched the pathctl section but found the controller at its max_connections bound.",
		pathctl: func(e emitter, r *pathctlReading) { e.emit(float64(r.p.skipped)) }},

	// The kernel's MPTCP MIB counters, per namespace read.
	{Name: "mptcp_cc_kernel_mptcp_mib_total", Type: counter, Labels: []string{"netns", "counter"},
		Help: "The kernel's MPTCP MIB counters (netstat MPTcpExt; docs/metrics.md says what each means), by network namespace (host: the exporter's own).",
		mib: func(e emitter, netns string, m map[string]uint64) {
			for _, c := range MIBCounters {
				if v, ok := m[c.Name]; ok {
					e.emit(float64(v), netns, c.Name)
				}
			}
		}},
}

// The families of each source, in table order.
var (
	mapsFamilies    []*Family // Collector's: scrape, algorithm, subflow, subflowX, scheduler
	subflowFamilies []*Family // of those, the per-subflow ones
	eventsFamilies  []*Family
	policyFamilies  []*Family
	reloadFamilies  []*Family
	pathctlFamilies []*Family
	mibFamilies     []*Family
)

func init() { index() }

// index numbers the table's families, makes their descriptors and sorts
// them by source.
func index() {
	mapsFamilies, subflowFamilies, eventsFamilies, policyFamilies, reloadFamilies, pathctlFamilies, mibFamilies = nil, nil, nil, nil, nil, nil, nil
	for i, f := range families {
		f.idx = i
		f.desc = prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
		switch {
		case f.subflow != nil || f.subflowX != nil:
			subflowFamilies = append(subflowFamilies, f)
			mapsFamilies = append(mapsFamilies, f)
		case f.scrape != nil || f.algorithm != nil || f.scheduler != nil:
			mapsFamilies = append(mapsFamilies, f)
		case f.events != nil:
			eventsFamilies = append(eventsFamilies, f)
		case f.policy != nil:
			policyFamilies = append(policyFamilies, f)
		case f.reloads != nil:
			reloadFamilies = append(reloadFamilies, f)
		case f.pathctl != nil:
			pathctlFamilies = append(pathctlFamilies, f)
		case f.mib != nil:
			mibFamilies = append(mibFamilies, f)
		}
	}
}

// readers counts the read functions a family has (the table wants one).
func (f *Family) readers() int {
	n := 0
	for _, set := range []bool{f.scrape != nil, f.algorithm != nil, f.subflow != nil, f.subflowX != nil, f.scheduler != nil,
		f.events != nil, f.policy != nil, f.reloads != nil, f.pathctl != nil, f.mib != nil} {
		if set {
			n++
		}
	}
	return n
}

// Families returns the table: every family `mptcp-cc serve` exports
// besides the Go runtime's and the process's.
func Families() []*Family { return append([]*Family(nil), families...) }

// Names returns the name of every family in the table, in table order.
func Names() []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = f.Name
	}
	return out
}

// nsLabel is how a namespace is labelled: "" (the exporter's own) is host.
func nsLabel(netns string) string {
	if netns == "" {
		return "host"
	}
	return netns
}

func describe(ch chan<- *prometheus.Desc, fams []*Family) {
	for _, f := range fams {
		ch <- f.desc
	}
}
