// SPDX-License-Identifier: Apache-2.0

// Package metrics exports the state of the loaded congestion controls to
// Prometheus. Everything is read from the BPF maps at scrape time by a
// prometheus.Collector: nothing is cached between scrapes, so a subflow that
// closed is simply absent from the next scrape.
//
// Naming follows the Prometheus guide: prefix mptcp_cc_, base units (seconds,
// bytes; window sizes in segments), counters end in _total. docs/metrics.md
// lists every metric.
//
// Per-subflow and per-connection series are bounded (Options.MaxSubflows):
// when there are more live subflows than the bound, the first ones in
// (token, subflow id) order are exported, the rest are counted in
// mptcp_cc_subflow_series_dropped. The per-algorithm aggregates always count
// every subflow.
package metrics

import (
	"bytes"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mptcp-cc/mptcp-cc/internal/version"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// DefaultMaxSubflows is the default bound on per-subflow series.
const DefaultMaxSubflows = 4096

// Version is the build's version: what `make build` stamps into
// internal/version (git describe, or the image's VERSION build argument),
// so mptcp_cc_build_info tells which nodes a rollout has reached.
var Version = version.Version

const ns = "mptcp_cc"

// Options configure a Collector.
type Options struct {
	// MaxSubflows bounds the number of subflows exported with per-subflow
	// series (and the connections exported with per-connection series).
	// 0 exports none: aggregates only.
	MaxSubflows int
	// Logger receives the one-time warning when the bound first cuts.
	Logger *slog.Logger
}

// Collector is a prometheus.Collector over a stats.Source. The same metrics are
// also written straight to the text exposition format by WriteText, which
// the /metrics handler uses: with thousands of subflows it is an order of
// magnitude cheaper than building a prometheus.Metric per sample.
type Collector struct {
	src  stats.Source
	opts Options

	mu      sync.Mutex // serialises scrapes: the maps are read once per scrape
	warned  bool
	lastDur time.Duration
	bufs    []bytes.Buffer // WriteText's per-family buffers, reused
}

// NewCollector returns a collector reading src at every scrape.
func NewCollector(src stats.Source, opts Options) *Collector {
	if opts.MaxSubflows < 0 {
		opts.MaxSubflows = 0
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Collector{src: src, opts: opts}
}

var (
	subflowLabels = []string{"cc", "algo", "token", "subflow", "local", "remote"}
	connLabels    = []string{"cc", "algo", "token"}
	algoLabels    = []string{"cc", "algo"}
	schedLabels   = []string{"scheduler", "algo"}
)

// family is one metric family: its descriptor for the Collector and what the
// text writer needs.
type family struct {
	idx    int
	name   string
	help   string
	typ    prometheus.ValueType
	labels []string
	desc   *prometheus.Desc
}

var families []*family

func def(typ prometheus.ValueType, name, help string, labels ...string) *family {
	f := &family{idx: len(families), name: ns + "_" + name, help: help, typ: typ, labels: labels}
	f.desc = prometheus.NewDesc(f.name, help, labels, nil)
	families = append(families, f)
	return f
}

func gaugeDef(name, help string, labels ...string) *family {
	return def(prometheus.GaugeValue, name, help, labels...)
}

func counterDef(name, help string, labels ...string) *family {
	return def(prometheus.CounterValue, name, help, labels...)
}

func with(base []string, extra ...string) []string {
	return append(append([]string(nil), base...), extra...)
}

var (
	famBuildInfo = gaugeDef("build_info", "Build of the mptcp-cc exporter; the value is always 1.", "version", "goversion", "revision")

	famScrapeDuration = gaugeDef("scrape_duration_seconds", "Time the previous scrape took to read the BPF maps and build the metrics.")
	famScrapeError    = gaugeDef("scrape_error", "1 if reading the BPF maps failed (partly or fully) during this scrape, else 0.")

	famAlgosLoaded    = gaugeDef("algorithms_loaded", "Congestion controls loaded (pinned) under the exporter's bpffs root.")
	famAlgoInfo       = gaugeDef("algorithm_info", "A loaded congestion control and its load-time parameters; the value is always 1.", "cc", "algo", "lisa", "trace")
	famAlgoRegistered = gaugeDef("algorithm_registered", "1 if the kernel lists the congestion control as available, 0 if only its pins are left.", algoLabels...)
	famAlgoRSFTarget  = gaugeDef("algorithm_rsf_target_seconds", "RSF's target queueing delay d as loaded (only RSF reads it).", algoLabels...)
	famAlgoConns      = gaugeDef("algorithm_connections", "Connections with at least one live subflow running the congestion control (a plain TCP socket counts as one connection).", algoLabels...)
	famAlgoSubflows   = gaugeDef("algorithm_subflows", "Live subflows running the congestion control.", algoLabels...)
	famAlgoCwnd       = gaugeDef("algorithm_cwnd_segments", "Sum of the congestion windows of the live subflows running the congestion control.", algoLabels...)
	famAlgoInFlight   = gaugeDef("algorithm_in_flight_segments", "Sum of the segments in flight of the live subflows running the congestion control.", algoLabels...)
	famAlgoPacing     = gaugeDef("algorithm_pacing_rate_bytes_per_second", "Sum of the pacing rates of the live subflows running the congestion control.", algoLabels...)
	famAlgoUntracked  = counterDef("algorithm_untracked_subflows_total", "Subflows since the congestion control was loaded that found its subflows map full: they ran it, but no series, list or top shows them (mptcp-cc load --max-subflows).", algoLabels...)

	famSubflowLimit   = gaugeDef("subflow_series_limit", "The bound on subflows exported with per-subflow series (--metrics.max-subflows).")
	famSubflowDropped = gaugeDef("subflow_series_dropped", "Live subflows left out of the per-subflow series at this scrape because of the bound.")
	famConnDropped    = gaugeDef("connection_series_dropped", "Connections left out of the per-connection series at this scrape because of the bound.")

	famConnSubflows = gaugeDef("connection_subflows", "Live subflows of an MPTCP connection that run the congestion control.", connLabels...)
	famConnCwnd     = gaugeDef("connection_cwnd_segments", "Sum of the congestion windows of an MPTCP connection's subflows.", connLabels...)
	famConnCoupled  = gaugeDef("connection_coupled", "The algorithm's coupled quantity for the connection (LIA/OLIA/BALIA: alpha, RSF: delay factor), as computed at the most recent update of any of its subflows.", with(connLabels, "quantity")...)

	famSubInfo      = gaugeDef("subflow_info", "A live subflow; the value is always 1. local_id/remote_id are the path manager's address ids; backup is this side's flag as the kernel has it now (MP_PRIO, endpoint flags).", with(subflowLabels, "local_id", "remote_id", "backup")...)
	famSubCwnd      = gaugeDef("subflow_cwnd_segments", "Congestion window.", subflowLabels...)
	famSubSsthresh  = gaugeDef("subflow_ssthresh_segments", "Slow-start threshold (+Inf while unset).", subflowLabels...)
	famSubSRTT      = gaugeDef("subflow_srtt_seconds", "Smoothed round-trip time.", subflowLabels...)
	famSubMinRTT    = gaugeDef("subflow_min_rtt_seconds", "Minimum round-trip time seen (the kernel's windowed min).", subflowLabels...)
	famSubRTTVar    = gaugeDef("subflow_rttvar_seconds", "Round-trip time variation (mdev).", subflowLabels...)
	famSubInFlight  = gaugeDef("subflow_in_flight_segments", "Segments in flight.", subflowLabels...)
	famSubPacing    = gaugeDef("subflow_pacing_rate_bytes_per_second", "Pacing rate the kernel computed for the subflow.", subflowLabels...)
	famSubCAState   = gaugeDef("subflow_ca_state", "Congestion-avoidance state: 0 open, 1 disorder, 2 cwr, 3 recovery, 4 loss.", subflowLabels...)
	famSubPaths     = gaugeDef("subflow_coupled_paths", "Coupled subflows of the connection seen at the subflow's last window increase.", subflowLabels...)
	famSubCoupled   = gaugeDef("subflow_coupled", "The algorithm's coupled quantity computed at the subflow's last update.", with(subflowLabels, "quantity")...)
	famSubDelivered = counterDef("subflow_delivered_segments_total", "Segments delivered (acknowledged) on the subflow.", subflowLabels...)
	famSubLost      = counterDef("subflow_lost_segments_total", "Segments the subflow marked lost.", subflowLabels...)
	famSubRetrans   = counterDef("subflow_retransmitted_segments_total", "Segments the subflow retransmitted.", subflowLabels...)
	famSubAcked     = counterDef("subflow_acked_bytes_total", "Bytes acknowledged on the subflow.", subflowLabels...)
	famSubSent      = counterDef("subflow_sent_bytes_total", "Bytes sent on the subflow, retransmissions included.", subflowLabels...)
	famSubLISAGiven = gaugeDef("subflow_lisa_given_segments", "Window segments the subflow gave to joining siblings (LISA).", subflowLabels...)
	famSubLISATaken = gaugeDef("subflow_lisa_taken_segments", "Window segments the subflow took from a sibling when it joined (LISA).", subflowLabels...)
	famSubRepairs   = counterDef("subflow_window_repairs_total", "Implausible kernel-stored windows the congestion control replaced (see docs/algorithms.md, the window guard).", subflowLabels...)

	famSchedsLoaded    = gaugeDef("schedulers_loaded", "Packet schedulers loaded (pinned) under the exporter's scheduler pin root.")
	famSchedInfo       = gaugeDef("scheduler_info", "A loaded packet scheduler and its load-time parameters (args: its six tunables, 0 = the default); the value is always 1.", "scheduler", "algo", "trace", "args")
	famSchedRegistered = gaugeDef("scheduler_registered", "1 if the kernel lists the packet scheduler in net.mptcp.available_schedulers, 0 if only its pins are left.", schedLabels...)
	famSchedDecisions  = counterDef("scheduler_decisions_total", "Subflows the scheduler's decisions picked, by kind (send: new data, retrans: a reinjection; a decision that picks two subflows counts twice), over every subflow its counter map holds, closed ones included until they age out of it.", with(schedLabels, "kind")...)
	famSchedBurst      = counterDef("scheduler_burst_bytes_total", "Bytes of burst the scheduler granted its picks, over every subflow its counter map holds.", schedLabels...)
	famNetnsSched      = gaugeDef("netns_scheduler_info", "The packet scheduler a network namespace gives new MPTCP connections (net.mptcp.scheduler; netns=\"host\" is the exporter's own); the value is always 1.", "netns", "scheduler")

	famSubSchedDecisions = counterDef("subflow_scheduler_decisions_total", "Decisions of the loaded packet scheduler that picked the subflow, by kind (send: new data, retrans: a reinjection).", with(subflowLabels, "scheduler", "kind")...)
	famSubSchedBurst     = counterDef("subflow_scheduler_burst_bytes_total", "Bytes of burst the loaded packet scheduler granted the subflow when it picked it.", with(subflowLabels, "scheduler")...)
)

// Describe sends every descriptor the collector may emit.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range families {
		ch <- f.desc
	}
}

// sink receives the samples of one scrape.
type sink interface {
	add(f *family, v float64, lv ...string)
}

type chanSink chan<- prometheus.Metric

func (s chanSink) add(f *family, v float64, lv ...string) {
	s <- prometheus.MustNewConstMetric(f.desc, f.typ, v, lv...)
}

// Collect reads the maps once and sends the metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.collect(chanSink(ch))
}

var caStateValue = map[string]float64{"open": 0, "disorder": 1, "cwr": 2, "recovery": 3, "loss": 4}

// TokenLabel formats a connection token as the metrics and `mptcp-cc top` do
// (8 hex digits); plain TCP sockets have none.
func TokenLabel(s *stats.Subflow) string {
	if !s.MPTCP {
		return ""
	}
	return tokenHex(s.Token)
}

func tokenHex(t uint32) string {
	const hex = "0123456789abcdef"
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = hex[t&0xf]
		t >>= 4
	}
	return string(b[:])
}

type algoAgg struct {
	subflows, cwnd, inflight, pacing float64
	conns                            map[uint32]struct{}
	plain                            int
}

type connKey struct {
	cc    string
	token uint32
}

type connAgg struct {
	key            connKey
	algo, quantity string
	subflows       int
	cwnd           float64
	coupled        float64
	updated        uint64
}

func (c *Collector) collect(out sink) {
	start := time.Now()
	add := out.add

	add(famBuildInfo, 1, Version, runtime.Version(), revision)
	add(famScrapeDuration, c.lastDur.Seconds())

	snap, err := c.src.Read()
	if err != nil {
		c.opts.Logger.Warn("reading the BPF maps", "err", err)
		add(famScrapeError, 1)
	} else {
		add(famScrapeError, 0)
	}

	// Per-algorithm aggregates: every subflow, no bound.
	aggs := make(map[string]*algoAgg, len(snap.Loaded))
	for _, l := range snap.Loaded {
		aggs[l.Name] = &algoAgg{conns: map[uint32]struct{}{}}
	}
	// A hash map iterated while it changes can return an entry twice:
	// keep the first copy of each subflow id.
	seen := make(map[uint64]struct{}, len(snap.Subflows))
	subs := make([]*stats.Subflow, 0, len(snap.Subflows))
	allConns := map[connKey]int{} // subflows per connection, all of them
	for i := range snap.Subflows {
		s := &snap.Subflows[i]
		if _, dup := seen[s.ID]; dup {
			continue
		}
		seen[s.ID] = struct{}{}
		subs = append(subs, s)
		a := aggs[s.CC]
		if a == nil {
			a = &algoAgg{conns: map[uint32]struct{}{}}
			aggs[s.CC] = a
		}
		a.subflows++
		a.cwnd += float64(s.Cwnd)
		a.inflight += float64(s.InFlight)
		a.pacing += float64(s.PacingRate)
		if s.MPTCP {
			a.conns[s.Token] = struct{}{}
			allConns[connKey{s.CC, s.Token}]++
		} else {
			a.plain++
		}
	}
	add(famAlgosLoaded, float64(len(snap.Loaded)))
	for _, l := range snap.Loaded {
		a := aggs[l.Name]
		add(famAlgoInfo, 1, l.Name, l.Algo, strconv.FormatBool(l.Params.LISA), strconv.FormatBool(l.Params.Trace))
		add(famAlgoRegistered, b2f(l.Registered), l.Name, l.Algo)
		add(famAlgoRSFTarget, l.Params.RSFTarget.Seconds(), l.Name, l.Algo)
		add(famAlgoConns, float64(len(a.conns)+a.plain), l.Name, l.Algo)
		add(famAlgoSubflows, a.subflows, l.Name, l.Algo)
		add(famAlgoCwnd, a.cwnd, l.Name, l.Algo)
		add(famAlgoInFlight, a.inflight, l.Name, l.Algo)
		add(famAlgoPacing, a.pacing, l.Name, l.Algo)
		add(famAlgoUntracked, float64(l.Untracked), l.Name, l.Algo)
	}

	// Per-subflow and per-connection series, bounded.
	limit := c.opts.MaxSubflows
	exported := subs
	if len(exported) > limit {
		exported = exported[:limit]
	}
	dropped := len(subs) - len(exported)
	add(famSubflowLimit, float64(limit))
	add(famSubflowDropped, float64(dropped))
	if dropped > 0 && !c.warned {
		c.warned = true
		c.opts.Logger.Warn("more live subflows than the per-subflow series bound: the rest are only in the aggregates (mptcp_cc_subflow_series_dropped counts them); raise --metrics.max-subflows to export them",
			"subflows", len(subs), "max_subflows", limit)
	}

	var conns []*connAgg
	connIdx := map[connKey]*connAgg{}
	lv := make([]string, len(subflowLabels), len(subflowLabels)+3)
	for _, s := range exported {
		token := TokenLabel(s)
		lv = append(lv[:0], s.CC, s.Algo, token, strconv.FormatUint(uint64(s.SubflowID), 10), s.Local.String(), s.Remote.String())
		q := quantity(s)
		add(famSubInfo, 1, append(lv, strconv.Itoa(int(s.LocalID)), strconv.Itoa(int(s.RemoteID)), strconv.FormatBool(s.Backup))...)
		add(famSubCwnd, float64(s.Cwnd), lv...)
		add(famSubSsthresh, ssthresh(s.Ssthresh), lv...)
		add(famSubSRTT, s.SRTT.Seconds(), lv...)
		add(famSubMinRTT, s.MinRTT.Seconds(), lv...)
		add(famSubRTTVar, s.RTTVar.Seconds(), lv...)
		add(famSubInFlight, float64(s.InFlight), lv...)
		add(famSubPacing, float64(s.PacingRate), lv...)
		if v, ok := caStateValue[s.CAState]; ok {
			add(famSubCAState, v, lv...)
		}
		add(famSubPaths, float64(s.Paths), lv...)
		add(famSubCoupled, s.Coupled, append(lv, q)...)
		add(famSubDelivered, float64(s.Delivered), lv...)
		add(famSubLost, float64(s.Lost), lv...)
		add(famSubRetrans, float64(s.Retrans), lv...)
		add(famSubAcked, float64(s.BytesAcked), lv...)
		add(famSubSent, float64(s.BytesSent), lv...)
		add(famSubLISAGiven, float64(s.LISAGiven), lv...)
		add(famSubLISATaken, float64(s.LISATaken), lv...)
		add(famSubRepairs, float64(s.Repairs), lv...)
		if sc := s.Sched; sc != nil {
			add(famSubSchedDecisions, float64(sc.Sends), append(lv, sc.Name, "send")...)
			add(famSubSchedDecisions, float64(sc.Retrans), append(lv, sc.Name, "retrans")...)
			add(famSubSchedBurst, float64(sc.BurstBytes), append(lv, sc.Name)...)
		}

		if !s.MPTCP {
			continue
		}
		k := connKey{s.CC, s.Token}
		a := connIdx[k]
		if a == nil {
			a = &connAgg{key: k, algo: s.Algo, quantity: q}
			connIdx[k] = a
			conns = append(conns, a)
		}
		a.subflows++
		a.cwnd += float64(s.Cwnd)
		if a.subflows == 1 || s.UpdatedNs > a.updated {
			a.updated, a.coupled = s.UpdatedNs, s.Coupled
		}
	}
	// A connection cut by the bound in the middle is exported with the
	// subflows that made it in (its cwnd sum covers those); its subflow
	// count stays complete.
	for _, a := range conns {
		token := tokenHex(a.key.token)
		add(famConnSubflows, float64(allConns[a.key]), a.key.cc, a.algo, token)
		add(famConnCwnd, a.cwnd, a.key.cc, a.algo, token)
		add(famConnCoupled, a.coupled, a.key.cc, a.algo, token, a.quantity)
	}
	add(famConnDropped, float64(len(allConns)-len(conns)))
	collectSched(add, snap)
	c.lastDur = time.Since(start)
}

// collectSched exports the packet schedulers: per scheduler (the sums cover
// every subflow its LRU counter map holds, so they only fall when more
// subflows than the map holds push old ones out) and per namespace.
func collectSched(add func(*family, float64, ...string), snap stats.Snapshot) {
	type sums struct{ sends, retrans, burst float64 }
	per := make(map[string]*sums, len(snap.Schedulers))
	for _, l := range snap.Schedulers {
		per[l.Name] = &sums{}
	}
	for _, st := range snap.SchedSubflows {
		if s := per[st.Scheduler]; s != nil {
			s.sends += float64(st.Sends)
			s.retrans += float64(st.Retrans)
			s.burst += float64(st.BurstBytes)
		}
	}
	add(famSchedsLoaded, float64(len(snap.Schedulers)))
	for _, l := range snap.Schedulers {
		s := per[l.Name]
		add(famSchedInfo, 1, l.Name, l.Algorithm, strconv.FormatBool(l.Params.Trace), schedArgs(l.Params.Args))
		add(famSchedRegistered, b2f(l.Registered), l.Name, l.Algorithm)
		add(famSchedDecisions, s.sends, l.Name, l.Algorithm, "send")
		add(famSchedDecisions, s.retrans, l.Name, l.Algorithm, "retrans")
		add(famSchedBurst, s.burst, l.Name, l.Algorithm)
	}
	for _, n := range snap.Netns {
		ns := n.Netns
		if ns == "" {
			ns = "host"
		}
		add(famNetnsSched, 1, ns, n.Scheduler)
	}
}

func schedArgs(args [6]uint32) string {
	b := make([]byte, 0, 24)
	for i, a := range args {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(a), 10)
	}
	return string(b)
}

func quantity(s *stats.Subflow) string {
	if s.CoupledName == "" {
		return "coupled"
	}
	return s.CoupledName
}

func ssthresh(v uint32) float64 {
	if stats.SsthreshIsInfinite(v) {
		return math.Inf(1)
	}
	return float64(v)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// revision is the stamped commit, else the one Go recorded (none in an
// image: its build context has no .git).
var revision = func() string {
	if version.Commit != "unknown" {
		return version.Commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}()
