// SPDX-License-Identifier: Apache-2.0

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
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
)

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

func fi(v int64) string { return strconv.FormatInt(v, 10) }

// WriteRep writes one repetition's files into r.Dir: result.json, the
// CSV files and, if rec asks for plots, the charts.
func WriteRep(r *RepResult, rec scenario.Record, interval time.Duration) error {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(r.Dir, "result.json"), r); err != nil {
		return err
	}
	thr := throughputSeries(r, interval)
	if err := writeRepCSV(r, thr); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "commands.txt"), []byte(joinLines(r.Commands)), 0o644); err != nil {
		return err
	}
	if !rec.Plots {
		return nil
	}
	return writeRepCharts(r, thr)
}

// writeRepCSV writes flows, subflows, goodput, throughput and links.csv.
func writeRepCSV(r *RepResult, thr []Series) error {
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
	return writeCSV(filepath.Join(r.Dir, "links.csv"), []string{"link", "kind", "emulated", "sent_bytes", "sent_packets", "dropped_packets", "dropped_random_loss"}, rows)
}

// repChart is one chart of a repetition.
type repChart struct {
	file   string
	series []Series
	what   string // the title after the case
	ylabel string
}

// writeRepCharts writes the goodput and cwnd charts of a repetition.
func writeRepCharts(r *RepResult, thr []Series) error {
	title := r.Case
	charts := []repChart{{"throughput.svg", thr, "goodput per flow (receiver)", "Mbit/s"}}
	if cw, sumcw := cwndSeries(r); len(cw) > 0 {
		charts = append(charts, repChart{"cwnd.svg", cw, "cwnd per subflow", "cwnd (segments)"},
			repChart{"cwnd_sum.svg", sumcw, "sum of cwnd per flow", "sum of cwnd (segments)"})
	}
	for _, c := range charts {
		if len(c.series) == 0 {
			continue
		}
		svg := LineChart{Title: title + ": " + c.what, XLabel: "time (s)", YLabel: c.ylabel, Series: limitSeries(c.series, 16)}.SVG()
		if err := os.WriteFile(filepath.Join(r.Dir, c.file), svg, 0o644); err != nil {
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
	order, by := groupBy(r.Goodput, func(g GoodputSample) string { return g.Flow })
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

// groupBy groups items by key, keeping the order in which keys first appear.
func groupBy[T any](items []T, key func(T) string) (order []string, groups map[string][]T) {
	groups = map[string][]T{}
	for _, it := range items {
		k := key(it)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], it)
	}
	return order, groups
}
