// SPDX-License-Identifier: Apache-2.0

// Package metrics exports the state of the loaded congestion controls to
// Prometheus. Everything is read from the BPF maps at scrape time by a
// prometheus.Collector: nothing is cached between scrapes, so a subflow that
// closed is simply absent from the next scrape. The daemon's own state
// (events, policies, reloads, path controllers, the kernel's MIB) is read
// by one collector per source (Daemon).
//
// Every family is declared once, in the table of families.go, with the
// function that reads it. Naming follows the Prometheus guide: prefix
// mptcp_cc_, base units (seconds, bytes; window sizes in segments),
// counters end in _total. docs/metrics.md lists every metric.
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
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mptcp-cc/mptcp-cc/internal/version"
	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// DefaultMaxSubflows is the default bound on per-subflow series.
const DefaultMaxSubflows = 4096

// Version is the build's version: what `make build` stamps into
// internal/version (git describe, or the image's VERSION build argument),
// so mptcp_cc_build_info tells which nodes a rollout has reached.
var Version = version.Version

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

// Describe sends every descriptor the collector may emit.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { describe(ch, mapsFamilies) }

// sink receives the samples of one scrape.
type sink interface {
	add(f *Family, v float64, lv ...string)
}

type chanSink chan<- prometheus.Metric

func (s chanSink) add(f *Family, v float64, lv ...string) {
	s <- prometheus.MustNewConstMetric(f.desc, f.Type, v, lv...)
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

// scrape is what one scrape read from the maps, with the sums the
// families read from it.
type scrape struct {
	snap    stats.Snapshot
	err     error         // from reading the maps
	lastDur time.Duration // of the scrape before
	limit   int           // Options.MaxSubflows
	// subs are the subflows, each once; exported the first limit of them.
	subs, exported []*stats.Subflow
	aggs           map[string]*algoAgg   // by registered name: every subflow
	allConns       map[connKey]int       // subflows per connection, all of them
	conns          []*connAgg            // the connections of exported, in order
	scheds         map[string]*schedSums // by registered name
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
	key                   connKey
	algo, token, quantity string
	cwnd                  float64
	coupled               float64
	subflows              int
	updated               uint64
}

type schedSums struct{ sends, retrans, burst float64 }

// collect reads the maps once and hands every family of the table its
// samples.
func (c *Collector) collect(out sink) {
	start := time.Now()
	sc := c.read()
	for _, f := range mapsFamilies {
		e := emitter{out, f}
		switch {
		case f.scrape != nil:
			f.scrape(e, sc)
		case f.algorithm != nil:
			for i := range sc.snap.Loaded {
				l := &sc.snap.Loaded[i]
				e.emit(f.algorithm(l, sc.aggs[l.Name]), l.Name, l.Algo)
			}
		case f.scheduler != nil:
			for i := range sc.snap.Schedulers {
				l := &sc.snap.Schedulers[i]
				f.scheduler(e, l, sc.scheds[l.Name])
			}
		}
	}
	// A subflow's families in turn, so that the text writer formats its
	// labels once for each run of families that share them.
	lv := make([]string, len(subflowLabels), len(subflowLabels)+3)
	for _, s := range sc.exported {
		if s.Record == nil { // not from a subflows map: readers of the record see zeros
			withRecord := *s
			withRecord.Record = &noRecord
			s = &withRecord
		}
		lv = append(lv[:0], s.CC, s.Algo, TokenLabel(s), strconv.FormatUint(uint64(s.SubflowID), 10), s.Local.String(), s.Remote.String())
		for _, f := range subflowFamilies {
			if f.subflow != nil {
				out.add(f, f.subflow(s), lv...)
			} else {
				f.subflowX(emitter{out, f}, s, lv)
			}
		}
	}
	c.lastDur = time.Since(start)
}

// noRecord is the record of subflows that came with none.
var noRecord abi.Subflow

// read reads the maps and sums what the families need: the per-algorithm
// aggregates over every subflow, the bound, the exported connections and
// the schedulers' sums.
func (c *Collector) read() *scrape {
	sc := &scrape{lastDur: c.lastDur, limit: c.opts.MaxSubflows}
	sc.snap, sc.err = c.src.Read()
	if sc.err != nil {
		c.opts.Logger.Warn("reading the BPF maps", "err", sc.err)
	}
	snap := &sc.snap

	sc.aggs = make(map[string]*algoAgg, len(snap.Loaded))
	for _, l := range snap.Loaded {
		sc.aggs[l.Name] = &algoAgg{conns: map[uint32]struct{}{}}
	}
	// A hash map iterated while it changes can return an entry twice:
	// keep the first copy of each subflow id.
	seen := make(map[uint64]struct{}, len(snap.Subflows))
	sc.subs = make([]*stats.Subflow, 0, len(snap.Subflows))
	sc.allConns = map[connKey]int{}
	for i := range snap.Subflows {
		s := &snap.Subflows[i]
		if _, dup := seen[s.ID]; dup {
			continue
		}
		seen[s.ID] = struct{}{}
		sc.subs = append(sc.subs, s)
		a := sc.aggs[s.CC]
		if a == nil {
			a = &algoAgg{conns: map[uint32]struct{}{}}
			sc.aggs[s.CC] = a
		}
		a.subflows++
		a.cwnd += float64(s.Cwnd)
		a.inflight += float64(s.InFlight)
		a.pacing += float64(s.PacingRate)
		if s.MPTCP {
			a.conns[s.Token] = struct{}{}
			sc.allConns[connKey{s.CC, s.Token}]++
		} else {
			a.plain++
		}
	}

	// Per-subflow and per-connection series, bounded.
	sc.exported = sc.subs
	if len(sc.exported) > sc.limit {
		sc.exported = sc.exported[:sc.limit]
	}
	if len(sc.exported) < len(sc.subs) && !c.warned {
		c.warned = true
		c.opts.Logger.Warn("more live subflows than the per-subflow series bound: the rest are only in the aggregates (mptcp_cc_subflow_series_dropped counts them); raise --metrics.max-subflows to export them",
			"subflows", len(sc.subs), "max_subflows", sc.limit)
	}
	connIdx := map[connKey]*connAgg{}
	for _, s := range sc.exported {
		if !s.MPTCP {
			continue
		}
		k := connKey{s.CC, s.Token}
		a := connIdx[k]
		if a == nil {
			a = &connAgg{key: k, algo: s.Algo, token: tokenHex(s.Token), quantity: quantity(s)}
			connIdx[k] = a
			sc.conns = append(sc.conns, a)
		}
		a.subflows++
		a.cwnd += float64(s.Cwnd)
		if a.subflows == 1 || s.UpdatedNs > a.updated {
			a.updated, a.coupled = s.UpdatedNs, s.Coupled
		}
	}

	// The schedulers' sums.
	sc.scheds = make(map[string]*schedSums, len(snap.Schedulers))
	for _, l := range snap.Schedulers {
		sc.scheds[l.Name] = &schedSums{}
	}
	for _, st := range snap.SchedSubflows {
		if s := sc.scheds[st.Scheduler]; s != nil {
			s.sends += float64(st.Sends)
			s.retrans += float64(st.Retrans)
			s.burst += float64(st.BurstBytes)
		}
	}
	return sc
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
