package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/lab/scenario"
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

// retransAfter is what flow instance name retransmitted after from seconds
// into the repetition, from the subflow samples: per subflow, its last
// count minus its last count at or before from (a subflow first seen after
// from counts from zero). With record.warmup set to a late join, it counts
// what the join cost. Kernel counts where they were sampled, else the
// map's.
func retransAfter(samples []SubflowSample, name string, from float64) uint64 {
	kernel := false
	for _, s := range samples {
		if s.Flow == name && s.Source != "bpf" {
			kernel = true
			break
		}
	}
	before, last := map[int]uint64{}, map[int]uint64{}
	for _, s := range samples {
		if s.Flow != name || (s.Source != "bpf") != kernel {
			continue
		}
		if s.T <= from {
			before[s.Subflow] = s.Retrans
		}
		last[s.Subflow] = s.Retrans
	}
	var n uint64
	for sub, v := range last {
		if v > before[sub] {
			n += v - before[sub]
		}
	}
	return n
}

// SummarizeCase summarises one case over its repetitions; repetitions
// with an error or an anomaly do not count in the metrics.
func SummarizeCase(c scenario.Case, reps []*RepResult) CaseSummary {
	cs := CaseSummary{ID: c.ID, Variant: c.Variant, Sweep: c.Sweep, Links: map[string]Stat{}}
	var clean []*RepResult
	for _, r := range reps {
		b := RepBrief{Rep: r.Rep, Dir: r.Dir, Seconds: r.Seconds, Error: r.Error, Anomaly: r.anomaly()}
		cs.Reps = append(cs.Reps, b)
		switch {
		case r.Error != "":
		case b.Anomaly != "":
			cs.Excluded = append(cs.Excluded, b)
		default:
			clean = append(clean, r)
		}
	}
	for _, f := range c.Scenario.Flows {
		g := GroupSummary{Flow: f.Name, Tool: f.Tool, Protocol: f.Protocol(), CC: f.CC.String(), Metrics: map[string]Stat{}}
		vals := map[string][]float64{}
		for _, r := range reps {
			for _, fr := range r.Flows {
				if fr.Flow == f.Name && fr.Anomaly != "" {
					g.Anomalies++
				}
			}
		}
		for _, r := range clean {
			var thr, comp, retr, late, subs []float64
			from := (f.Start + c.Scenario.Record.Warmup).Seconds()
			for _, fr := range r.Flows {
				if fr.Flow != f.Name {
					continue
				}
				if fr.Error != "" {
					g.Errors++
					continue
				}
				thr = append(thr, fr.ThroughputMbps)
				comp = append(comp, fr.CompletionS)
				retr = append(retr, float64(fr.Retrans))
				late = append(late, float64(retransAfter(r.Samples, fr.Name, from)))
				subs = append(subs, float64(fr.Subflows))
			}
			g.Instances = max(g.Instances, len(thr))
			if len(thr) == 0 {
				continue
			}
			vals["throughput_mbps_mean"] = append(vals["throughput_mbps_mean"], mean(thr))
			vals["throughput_mbps_total"] = append(vals["throughput_mbps_total"], sum(thr))
			vals["completion_s_mean"] = append(vals["completion_s_mean"], mean(comp))
			vals["completion_s_max"] = append(vals["completion_s_max"], maxOf(comp))
			vals["retrans_mean"] = append(vals["retrans_mean"], mean(retr))
			vals["retrans_total"] = append(vals["retrans_total"], sum(retr))
			vals["retrans_after_warmup_mean"] = append(vals["retrans_after_warmup_mean"], mean(late))
			vals["subflows_mean"] = append(vals["subflows_mean"], mean(subs))
		}
		for _, m := range groupMetrics {
			g.Metrics[m] = newStat(vals[m])
		}
		cs.Groups = append(cs.Groups, g)
	}
	drops := map[string][]float64{}
	for _, r := range clean {
		for _, l := range r.Links {
			drops[l.Kind+":"+l.Link] = append(drops[l.Kind+":"+l.Link], float64(l.Dropped))
		}
	}
	for k, v := range drops {
		cs.Links[k] = newStat(v)
	}
	return cs
}

func mean(v []float64) float64 { return sum(v) / float64(len(v)) }
func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}
func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

// ---- writing ----

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func writeCSV(path string, header []string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(header)
	_ = w.WriteAll(rows)
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func ff(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
func fu(v uint64) string { return strconv.FormatUint(v, 10) }
func fi(v int64) string  { return strconv.FormatInt(v, 10) }

// WriteRep writes one repetition's files into r.Dir.
func WriteRep(r *RepResult, rec scenario.Record, interval time.Duration) error {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(r.Dir, "result.json"), r); err != nil {
		return err
	}
	var rows [][]string
	for _, f := range r.Flows {
		rows = append(rows, []string{f.Name, f.Flow, strconv.Itoa(f.Instance), f.Tool, f.Protocol, f.CC, f.CCKernel, f.CCActual,
			f.Local, f.Remote, ff(f.StartS), fi(f.RequestBytes), ff(f.RequestS), fi(f.Sent), fi(f.Delivered),
			ff(f.ElapsedS), ff(f.CompletionS), ff(f.ThroughputMbps), fu(f.Retrans), fu(f.RetransBPF),
			strconv.Itoa(f.Subflows), strconv.FormatBool(f.Intact), f.Error, f.Anomaly, f.Command})
	}
	if err := writeCSV(filepath.Join(r.Dir, "flows.csv"), []string{"name", "flow", "instance", "tool", "protocol", "cc", "cc_kernel", "cc_actual",
		"local", "remote", "start_s", "request_bytes", "request_s", "sent_bytes", "delivered_bytes",
		"elapsed_s", "completion_s", "throughput_mbps", "retrans_segments", "retrans_segments_bpf",
		"subflows", "intact", "error", "anomaly", "command"}, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, s := range r.Samples {
		rows = append(rows, []string{ff(s.T), s.Flow, strconv.Itoa(s.Subflow), s.Path, s.Local, s.Remote, s.CC, s.Source,
			fu(uint64(s.Cwnd)), fu(uint64(s.Ssthresh)), ff(s.SRTTMs), ff(s.MinRTTMs), fu(s.BytesAcked), fu(s.BytesSent),
			fu(s.Retrans), fu(s.Lost), fu(uint64(s.InFlight)), s.CAState, ff(s.Coupled), fu(uint64(s.LISAGiven)), fu(uint64(s.LISATaken)),
			ff(s.BusyMs), ff(s.RwndLimitedMs), ff(s.SndbufLimitedMs), fu(uint64(s.Repairs))})
	}
	if err := writeCSV(filepath.Join(r.Dir, "subflows.csv"), []string{"t", "flow", "subflow", "path", "local", "remote", "cc", "source",
		"cwnd", "ssthresh", "srtt_ms", "min_rtt_ms", "bytes_acked", "bytes_sent", "retrans", "lost", "in_flight", "ca_state",
		"coupled", "lisa_given", "lisa_taken", "busy_ms", "rwnd_limited_ms", "sndbuf_limited_ms", "window_repairs"}, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, g := range r.Goodput {
		rows = append(rows, []string{ff(g.T), g.Flow, fi(g.Bytes)})
	}
	if err := writeCSV(filepath.Join(r.Dir, "goodput.csv"), []string{"t", "flow", "bytes"}, rows); err != nil {
		return err
	}
	thr := throughputSeries(r, interval)
	rows = rows[:0]
	for _, p := range thr {
		for i := range p.X {
			rows = append(rows, []string{ff(p.X[i]), p.Name, ff(p.Y[i])})
		}
	}
	if err := writeCSV(filepath.Join(r.Dir, "throughput.csv"), []string{"t", "flow", "mbps"}, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, l := range r.Links {
		rows = append(rows, []string{l.Link, l.Kind, strconv.FormatBool(l.Emulated), fu(l.SentBytes), fu(l.SentPackets), fu(l.Dropped), fu(l.DroppedLoss)})
	}
	if err := writeCSV(filepath.Join(r.Dir, "links.csv"), []string{"link", "kind", "emulated", "sent_bytes", "sent_packets", "dropped_packets", "dropped_random_loss"}, rows); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "commands.txt"), []byte(joinLines(r.Commands)), 0o644); err != nil {
		return err
	}
	if !rec.Plots {
		return nil
	}
	title := r.Case
	if len(thr) > 0 {
		if err := os.WriteFile(filepath.Join(r.Dir, "throughput.svg"), LineChart{
			Title: title + ": goodput per flow (receiver)", XLabel: "time (s)", YLabel: "Mbit/s", Series: limitSeries(thr, 16),
		}.SVG(), 0o644); err != nil {
			return err
		}
	}
	cw, sumcw := cwndSeries(r)
	if len(cw) > 0 {
		if err := os.WriteFile(filepath.Join(r.Dir, "cwnd.svg"), LineChart{
			Title: title + ": cwnd per subflow", XLabel: "time (s)", YLabel: "cwnd (segments)", Series: limitSeries(cw, 16),
		}.SVG(), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(r.Dir, "cwnd_sum.svg"), LineChart{
			Title: title + ": sum of cwnd per flow", XLabel: "time (s)", YLabel: "sum of cwnd (segments)", Series: limitSeries(sumcw, 16),
		}.SVG(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func joinLines(l []string) string {
	s := ""
	for _, x := range l {
		s += x + "\n"
	}
	return s
}

// limitSeries keeps a chart readable: beyond n series, it averages the
// series of each flow group (names "group/instance...") into one line.
func limitSeries(s []Series, n int) []Series {
	if len(s) <= n {
		return s
	}
	type acc struct {
		x   []float64
		sum map[float64]float64
		cnt map[float64]int
	}
	groups := map[string]*acc{}
	var order []string
	for _, ser := range s {
		g := groupOf(ser.Name)
		a := groups[g]
		if a == nil {
			a = &acc{sum: map[float64]float64{}, cnt: map[float64]int{}}
			groups[g] = a
			order = append(order, g)
		}
		for i, x := range ser.X {
			if _, ok := a.cnt[x]; !ok {
				a.x = append(a.x, x)
			}
			a.sum[x] += ser.Y[i]
			a.cnt[x]++
		}
	}
	var out []Series
	for _, g := range order {
		a := groups[g]
		sort.Float64s(a.x)
		ser := Series{Name: g + " (mean)"}
		for _, x := range a.x {
			ser.X = append(ser.X, x)
			ser.Y = append(ser.Y, a.sum[x]/float64(a.cnt[x]))
		}
		out = append(out, ser)
	}
	return out
}

// groupOf strips the instance ("/3") and subflow (" sf1 ...") parts.
func groupOf(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			rest := name[i:]
			for j := 0; j < len(rest); j++ {
				if rest[j] == ' ' {
					return name[:i] + rest[j:]
				}
			}
			return name[:i]
		}
	}
	return name
}

// throughputSeries turns cumulative receiver bytes into Mbit/s per bin.
func throughputSeries(r *RepResult, interval time.Duration) []Series {
	bin := math.Max(interval.Seconds(), 0.2)
	by := map[string][]GoodputSample{}
	var order []string
	for _, g := range r.Goodput {
		if _, ok := by[g.Flow]; !ok {
			order = append(order, g.Flow)
		}
		by[g.Flow] = append(by[g.Flow], g)
	}
	var out []Series
	for _, name := range order {
		pts := by[name]
		s := Series{Name: name}
		last := pts[0]
		for _, p := range pts[1:] {
			if p.T-last.T < bin-1e-9 {
				continue
			}
			s.X = append(s.X, p.T)
			s.Y = append(s.Y, float64(p.Bytes-last.Bytes)*8/(p.T-last.T)/1e6)
			last = p
		}
		if len(s.X) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// cwndSeries returns cwnd per subflow and the per-flow sum of cwnd.
func cwndSeries(r *RepResult) (per, sums []Series) {
	type key struct {
		flow string
		sub  int
	}
	idx := map[key]int{}
	sumIdx := map[string]int{}
	sumAt := map[string]map[float64]float64{}
	for _, s := range r.Samples {
		k := key{s.Flow, s.Subflow}
		i, ok := idx[k]
		if !ok {
			i = len(per)
			idx[k] = i
			per = append(per, Series{Name: fmt.Sprintf("%s sf%d %s", s.Flow, s.Subflow, s.Path)})
		}
		per[i].X = append(per[i].X, s.T)
		per[i].Y = append(per[i].Y, float64(s.Cwnd))
		if _, ok := sumIdx[s.Flow]; !ok {
			sumIdx[s.Flow] = len(sums)
			sums = append(sums, Series{Name: s.Flow})
			sumAt[s.Flow] = map[float64]float64{}
		}
		sumAt[s.Flow][s.T] += float64(s.Cwnd)
	}
	for i := range sums {
		m := sumAt[sums[i].Name]
		var ts []float64
		for t := range m {
			ts = append(ts, t)
		}
		sort.Float64s(ts)
		for _, t := range ts {
			sums[i].X = append(sums[i].X, t)
			sums[i].Y = append(sums[i].Y, m[t])
		}
	}
	return per, sums
}

// WriteSummary writes summary.json, summary.csv and the bar/sweep charts.
func WriteSummary(dir string, s *Summary) error {
	if err := writeJSON(filepath.Join(dir, "summary.json"), s); err != nil {
		return err
	}
	var rows [][]string
	for _, c := range s.Cases {
		for _, g := range c.Groups {
			for _, m := range groupMetrics {
				st := g.Metrics[m]
				rows = append(rows, []string{c.ID, c.Variant, c.Sweep, g.Flow, g.CC, g.Protocol, strconv.Itoa(g.Instances), m,
					ff(st.Mean), ff(st.SD), ff(st.Min), ff(st.Max), strconv.Itoa(st.N)})
			}
		}
	}
	if err := writeCSV(filepath.Join(dir, "summary.csv"), []string{"case", "variant", "sweep", "flow", "cc", "protocol", "instances",
		"metric", "mean", "sd", "min", "max", "n"}, rows); err != nil {
		return err
	}
	for _, m := range []struct{ metric, file, label string }{
		{"throughput_mbps_mean", "throughput.svg", "throughput per flow (Mbit/s)"},
		{"completion_s_mean", "completion.svg", "completion time (s)"},
		{"retrans_mean", "retrans.svg", "retransmissions per flow (segments)"},
	} {
		if err := os.WriteFile(filepath.Join(dir, m.file), summaryChart(s, m.metric, m.label), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// summaryChart is a bar chart (variants x flow groups) without a sweep,
// a line chart over the sweep values (one line per variant and group)
// with one.
func summaryChart(s *Summary, metric, label string) []byte {
	var flows []string
	seen := map[string]bool{}
	for _, c := range s.Cases {
		for _, g := range c.Groups {
			if !seen[g.Flow] {
				seen[g.Flow] = true
				flows = append(flows, g.Flow)
			}
		}
	}
	title := s.Scenario + ": " + label + ", mean ± sd over repetitions"
	if len(s.SweepValues) == 0 {
		bc := BarChart{Title: title, YLabel: label, Categories: s.Variants}
		for _, fl := range flows {
			bs := BarSeries{Name: fl}
			for _, v := range s.Variants {
				st := Stat{Mean: math.NaN(), SD: math.NaN()}
				if c := s.Case(v); c != nil {
					if g := c.Group(fl); g != nil {
						st = g.Metrics[metric]
					}
				}
				bs.Values = append(bs.Values, st.Mean)
				bs.Err = append(bs.Err, st.SD)
			}
			bc.Series = append(bc.Series, bs)
		}
		return bc.SVG()
	}
	lc := LineChart{Title: title, XLabel: s.SweepName, YLabel: label, XTicks: s.SweepValues}
	for _, v := range s.Variants {
		for _, fl := range flows {
			ser := Series{Name: v + " " + fl, Markers: true}
			if len(flows) == 1 {
				ser.Name = v
			}
			for i, sv := range s.SweepValues {
				st := Stat{Mean: math.NaN()}
				if c := s.Case(v + "@" + scenario.Sanitize(sv)); c != nil {
					if g := c.Group(fl); g != nil {
						st = g.Metrics[metric]
					}
				}
				ser.X = append(ser.X, float64(i))
				ser.Y = append(ser.Y, st.Mean)
				ser.Err = append(ser.Err, st.SD)
			}
			lc.Series = append(lc.Series, ser)
		}
	}
	return lc.SVG()
}

// MergeSummary keeps, when only some cases were run (--case), the other
// cases of an earlier run of the same scenario in the summary, so that a
// failed or interrupted case can be re-run alone. Cases follow the file's
// order.
func MergeSummary(path string, f *scenario.File, sum *Summary) {
	old, err := ReadSummary(path)
	if err != nil || old.Scenario != sum.Scenario {
		return
	}
	have := map[string]CaseSummary{}
	for _, c := range old.Cases {
		have[c.ID] = c
	}
	for _, c := range sum.Cases {
		have[c.ID] = c
	}
	sum.Cases, sum.Variants = nil, nil
	seenV := map[string]bool{}
	for _, c := range f.Cases {
		cs, ok := have[c.ID]
		if !ok {
			continue
		}
		sum.Cases = append(sum.Cases, cs)
		if !seenV[c.Variant] {
			seenV[c.Variant] = true
			sum.Variants = append(sum.Variants, c.Variant)
		}
	}
	sum.Merged = append(old.Merged, old.Run)
}

// Brief is a repetition in one line, for the run log.
func Brief(r *RepResult) string {
	if r.Error != "" && len(r.Flows) == 0 {
		return "FAILED: " + r.Error
	}
	groups := map[string][]FlowResult{}
	var order []string
	for _, f := range r.Flows {
		if _, ok := groups[f.Flow]; !ok {
			order = append(order, f.Flow)
		}
		groups[f.Flow] = append(groups[f.Flow], f)
	}
	var parts []string
	for _, g := range order {
		fl := groups[g]
		var thr, comp []float64
		var rt uint64
		for _, f := range fl {
			thr = append(thr, f.ThroughputMbps)
			comp = append(comp, f.CompletionS)
			rt += f.Retrans
		}
		p := fmt.Sprintf("%s %.2f Mbit/s", g, mean(thr))
		if len(fl) > 1 {
			p = fmt.Sprintf("%s x%d %.2f Mbit/s each", g, len(fl), mean(thr))
		}
		if fl[0].RequestBytes > 0 {
			p += fmt.Sprintf(" in %.3f s", mean(comp))
		}
		p += fmt.Sprintf(", %d retrans", rt)
		for _, f := range fl {
			if f.Anomaly != "" {
				p += " [ANOMALY " + f.Name + ": " + f.Anomaly + "]"
				break
			}
		}
		parts = append(parts, p)
	}
	s := strings.Join(parts, "; ") + fmt.Sprintf(" (%.1f s)", r.Seconds)
	if r.Error != "" {
		s += " ERROR: " + r.Error
	}
	return s
}

// maxPlausibleCwnd: no window in the lab's networks comes near a million
// segments (1.5 GB in flight); beyond it a sample is a bug, not a state.
const maxPlausibleCwnd = 1 << 20

// FindAnomalies returns, per flow, the first sample with an implausible
// window. Only cwnd counts: the kernel can store an implausible ssthresh
// that our congestion controls then replace (docs/algorithms.md, "The
// window guard"), and a sample may catch it in between; it changes nothing
// unless it reaches cwnd, which is what sends.
func FindAnomalies(samples []SubflowSample) map[string]string {
	out := map[string]string{}
	for _, s := range samples {
		if _, seen := out[s.Flow]; !seen && s.Cwnd > maxPlausibleCwnd {
			out[s.Flow] = fmt.Sprintf("subflow %d (%s) had cwnd %d, ssthresh %d at t=%.2fs: implausible (kernel-stored window not repaired?)",
				s.Subflow, s.Path, s.Cwnd, s.Ssthresh, s.T)
		}
	}
	return out
}
