// SPDX-License-Identifier: Apache-2.0

package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"
)

// FlowResult is one transfer of one repetition.
type FlowResult struct {
	Flow     string `json:"flow"`     // the flow (group) name in the scenario
	Instance int    `json:"instance"` // 0..host count x count - 1
	Name     string `json:"name"`     // flow/instance
	Host     string `json:"host_ns"`
	Tool     string `json:"tool"`
	Protocol string `json:"protocol"`
	CC       string `json:"cc"`        // as written in the scenario
	CCKernel string `json:"cc_kernel"` // the name the socket asked for
	CCActual string `json:"cc_actual"` // what the socket reported running
	Local    string `json:"local"`     // initial subflow
	Remote   string `json:"remote"`

	StartS       float64 `json:"start_s"`       // offset from the repetition's start
	RequestBytes int64   `json:"request_bytes"` // 0 for timed flows
	RequestS     float64 `json:"request_s"`     // 0 for sized flows

	Sent      int64 `json:"sent_bytes"`
	Delivered int64 `json:"delivered_bytes"` // what the receiver counted
	// ElapsedS runs from connect to the end of the transfer as the client
	// saw it (the server's receipt for xfer; iperf3's own sender time).
	ElapsedS float64 `json:"elapsed_s"`
	// CompletionS runs from connect to the last byte at the receiver.
	CompletionS float64 `json:"completion_s"`
	// ThroughputMbps is the receiver-side goodput: for timed flows over
	// [start+warmup, start+duration], for sized flows delivered/completion.
	ThroughputMbps float64 `json:"throughput_mbps"`
	// Retrans is the sum over the flow's subflows of tcp_info
	// total_retrans (kernel view, last sample); RetransBPF the same from
	// mptcp-cc's map (our CCs only).
	Retrans    uint64 `json:"retrans_segments"`
	RetransBPF uint64 `json:"retrans_segments_bpf"`
	Subflows   int    `json:"subflows"` // distinct subflows seen
	Intact     bool   `json:"intact"`
	Error      string `json:"error,omitempty"`
	// Anomaly notes implausible subflow state seen in the samples (e.g. a
	// window of millions of segments: a congestion control bug).
	Anomaly string `json:"anomaly,omitempty"`
	Command string `json:"command"` // the client command line (or its CLI equivalent)
}

// SubflowSample is one subflow at one sampling time.
type SubflowSample struct {
	T          float64 `json:"t"`
	Flow       string  `json:"flow"`
	Subflow    int     `json:"subflow"` // index within the flow, in order of appearance
	Path       string  `json:"path"`    // the access link it crosses
	Local      string  `json:"local"`
	Remote     string  `json:"remote"`
	CC         string  `json:"cc"`
	Source     string  `json:"source"` // kernel (tcp_info), bpf (map only) or both
	Cwnd       uint32  `json:"cwnd"`
	Ssthresh   uint32  `json:"ssthresh"`
	SRTTMs     float64 `json:"srtt_ms"`
	MinRTTMs   float64 `json:"min_rtt_ms"`
	BytesAcked uint64  `json:"bytes_acked"`
	BytesSent  uint64  `json:"bytes_sent"`
	Retrans    uint64  `json:"retrans"`
	Lost       uint64  `json:"lost"`
	InFlight   uint32  `json:"in_flight"`
	CAState    string  `json:"ca_state"`
	Coupled    float64 `json:"coupled"` // alpha / delay factor (bpf)
	LISAGiven  uint32  `json:"lisa_given"`
	LISATaken  uint32  `json:"lisa_taken"`
	Repairs    uint32  `json:"window_repairs"` // implausible kernel-set windows the CC replaced (bpf)
	// Cumulative time the subflow had data to send (tcp_info busy_time)
	// and, of it, the time it was limited by the receive window or by the
	// send buffer rather than by cwnd (kernel view only).
	BusyMs          float64 `json:"busy_ms"`
	RwndLimitedMs   float64 `json:"rwnd_limited_ms"`
	SndbufLimitedMs float64 `json:"sndbuf_limited_ms"`
}

// GoodputSample is the receiver's cumulative byte count of one flow.
type GoodputSample struct {
	T     float64 `json:"t"`
	Flow  string  `json:"flow"`
	Bytes int64   `json:"bytes"`
}

// LinkResult is a link's counters over one repetition.
type LinkResult struct {
	Link        string `json:"link"`
	Kind        string `json:"kind"` // access or server
	Emulated    bool   `json:"emulated"`
	SentBytes   uint64 `json:"sent_bytes"`
	SentPackets uint64 `json:"sent_packets"`
	Dropped     uint64 `json:"dropped_packets"`
	DroppedLoss uint64 `json:"dropped_random_loss"`
}

// RepResult is one repetition of one case.
type RepResult struct {
	Case     string          `json:"case"`
	Variant  string          `json:"variant"`
	Sweep    string          `json:"sweep,omitempty"`
	Rep      int             `json:"rep"`
	Started  time.Time       `json:"started"`
	Seconds  float64         `json:"seconds"`
	Network  []string        `json:"namespaces"`
	Flows    []FlowResult    `json:"flows"`
	Links    []LinkResult    `json:"links"`
	Error    string          `json:"error,omitempty"`
	Samples  []SubflowSample `json:"-"`
	Goodput  []GoodputSample `json:"-"`
	Dir      string          `json:"dir"`
	Commands []string        `json:"commands"`
}

// Stat summarises one metric over repetitions.
type Stat struct {
	Mean   float64   `json:"mean"`
	SD     float64   `json:"sd"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	N      int       `json:"n"`
	Values []float64 `json:"values"`
}

func newStat(v []float64) Stat {
	s := Stat{N: len(v), Values: v, Min: math.NaN(), Max: math.NaN(), Mean: math.NaN(), SD: math.NaN()}
	if len(v) == 0 {
		return s
	}
	sum := 0.0
	s.Min, s.Max = v[0], v[0]
	for _, x := range v {
		sum += x
		s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
	}
	s.Mean = sum / float64(len(v))
	if len(v) > 1 {
		ss := 0.0
		for _, x := range v {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(v)-1))
	} else {
		s.SD = 0
	}
	return s
}

// MarshalJSON writes NaN as null.
func (s Stat) MarshalJSON() ([]byte, error) {
	p := func(f float64) *float64 {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return &f
	}
	return json.Marshal(struct {
		Mean   *float64  `json:"mean"`
		SD     *float64  `json:"sd"`
		Min    *float64  `json:"min"`
		Max    *float64  `json:"max"`
		N      int       `json:"n"`
		Values []float64 `json:"values"`
	}{p(s.Mean), p(s.SD), p(s.Min), p(s.Max), s.N, s.Values})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Stat) UnmarshalJSON(b []byte) error {
	var in struct {
		Mean, SD, Min, Max *float64
		N                  int       `json:"n"`
		Values             []float64 `json:"values"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	g := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	*s = Stat{Mean: g(in.Mean), SD: g(in.SD), Min: g(in.Min), Max: g(in.Max), N: in.N, Values: in.Values}
	return nil
}

// Group metrics, per repetition, of the flows of one scenario flow entry.
// "_mean" is over the group's instances (per user); "_total" is the sum.
var groupMetrics = []string{
	"throughput_mbps_mean", "throughput_mbps_total", "completion_s_mean", "completion_s_max",
	"retrans_mean", "retrans_total", "retrans_after_warmup_mean", "subflows_mean",
	"queue_delay_ms_mean",
}

// GroupSummary summarises one flow group of one case over repetitions.
type GroupSummary struct {
	Flow      string          `json:"flow"`
	Instances int             `json:"instances"`
	Tool      string          `json:"tool"`
	Protocol  string          `json:"protocol"`
	CC        string          `json:"cc"`
	Metrics   map[string]Stat `json:"metrics"`
	Errors    int             `json:"failed_flows"`
	Anomalies int             `json:"anomalous_flows"`
}

// CaseSummary is one case over its repetitions.
type CaseSummary struct {
	ID      string          `json:"id"`
	Variant string          `json:"variant"`
	Sweep   string          `json:"sweep,omitempty"`
	Groups  []GroupSummary  `json:"groups"`
	Links   map[string]Stat `json:"link_drops"`
	Reps    []RepBrief      `json:"reps"`
	// Excluded lists repetitions left out of the metrics because a flow in
	// them showed an anomaly (a congestion-control bug, not behaviour).
	Excluded []RepBrief `json:"excluded_reps,omitempty"`
}

// RepBrief points at one repetition's directory.
type RepBrief struct {
	Rep     int     `json:"rep"`
	Dir     string  `json:"dir"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
	Anomaly string  `json:"anomaly,omitempty"`
}

// anomaly returns the first flow anomaly of a repetition, "" if none.
func (r *RepResult) anomaly() string {
	for _, f := range r.Flows {
		if f.Anomaly != "" {
			return f.Name + ": " + f.Anomaly
		}
	}
	return ""
}

// Summary is the result of running a scenario file.
type Summary struct {
	Scenario    string    `json:"scenario"`
	File        string    `json:"file"`
	Run         string    `json:"run_id"`
	Command     string    `json:"command"`
	Started     time.Time `json:"started"`
	Seconds     float64   `json:"seconds"`
	Kernel      string    `json:"kernel"`
	Commit      string    `json:"commit,omitempty"`
	Repetitions int       `json:"repetitions"`
	SweepName   string    `json:"sweep_name,omitempty"`
	SweepValues []string  `json:"sweep_values,omitempty"`
	Variants    []string  `json:"variants"`
	// CCs are the congestion controls the run loaded, as the runner
	// recorded them (spec, kernel name, parameters).
	CCs       json.RawMessage `json:"loaded_ccs"`
	Cases     []CaseSummary   `json:"cases"`
	Reference map[string]any  `json:"reference,omitempty"`
	Failed    int             `json:"failed_reps"`
	// Merged lists earlier runs whose cases this summary kept (run --case).
	Merged []string `json:"merged_runs,omitempty"`
}

// Case finds a case summary by id.
func (s *Summary) Case(id string) *CaseSummary {
	for i := range s.Cases {
		if s.Cases[i].ID == id {
			return &s.Cases[i]
		}
	}
	return nil
}

// Group finds a group summary by flow name.
func (c *CaseSummary) Group(flow string) *GroupSummary {
	for i := range c.Groups {
		if c.Groups[i].Flow == flow {
			return &c.Groups[i]
		}
	}
	return nil
}

// ReadSummary loads a summary.json.
func ReadSummary(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}
