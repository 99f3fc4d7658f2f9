// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
)

// flowSamples are flow instance name's subflow samples from one source:
// the kernel's (tcp_info) where any were taken, else the map's.
func flowSamples(samples []SubflowSample, name string) []SubflowSample {
	kernel := false
	for _, s := range samples {
		if s.Flow == name && s.Source != "bpf" {
			kernel = true
			break
		}
	}
	var out []SubflowSample
	for _, s := range samples {
		if s.Flow == name && (s.Source != "bpf") == kernel {
			out = append(out, s)
		}
	}
	return out
}

// retransAfter is what flow instance name retransmitted after from seconds
// into the repetition, from the subflow samples: per subflow, its last
// count minus its last count at or before from (a subflow first seen after
// from counts from zero). With record.warmup set to a late join, it counts
// what the join cost. Kernel counts where they were sampled, else the
// map's.
func retransAfter(samples []SubflowSample, name string, from float64) uint64 {
	before, last := map[int]uint64{}, map[int]uint64{}
	for _, s := range flowSamples(samples, name) {
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

// queueDelay is the mean, over the samples of flow instance name's
// subflows between from and to seconds into the repetition, of srtt minus
// min RTT (ms): the standing queue the flow saw above its base RTT, since
// the min RTT is the kernel's windowed minimum of the subflow's own
// samples. Kernel samples where there are any, else the map's. ok is
// false without any sample that has both RTTs.
func queueDelay(samples []SubflowSample, name string, from, to float64) (ms float64, ok bool) {
	return meanQueue(flowSamples(samples, name), from, to)
}

// meanQueue is the mean srtt minus min RTT (ms) of the samples between
// from and to seconds that have both RTTs; ok is false without any.
func meanQueue(samples []SubflowSample, from, to float64) (ms float64, ok bool) {
	var sum float64
	n := 0
	for _, s := range samples {
		if s.T < from || s.T > to || s.SRTTMs <= 0 || s.MinRTTMs <= 0 {
			continue
		}
		sum += max(s.SRTTMs-s.MinRTTMs, 0)
		n++
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
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
			var thr, comp, retr, late, subs, qd []float64
			from := (f.Start + c.Scenario.Record.Warmup).Seconds()
			to := math.Inf(1)
			if f.Duration > 0 {
				to = (f.Start + f.Duration).Seconds()
			}
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
				if q, ok := queueDelay(r.Samples, fr.Name, from, to); ok {
					qd = append(qd, q)
				}
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
			if len(qd) > 0 {
				vals["queue_delay_ms_mean"] = append(vals["queue_delay_ms_mean"], mean(qd))
			}
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
	order, groups := groupBy(r.Flows, func(f FlowResult) string { return f.Flow })
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
