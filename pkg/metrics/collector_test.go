// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// synthetic builds conns MPTCP connections of perConn subflows each on one
// loaded congestion control, plus plain TCP sockets.
func synthetic(conns, perConn, plain int) stats.Snapshot {
	snap := stats.Snapshot{Loaded: []cc.Loaded{
		{Name: "mptcp_olia", Algo: "olia", Registered: true, Params: cc.Params{LISA: true, RSFTarget: 10 * time.Millisecond}},
		{Name: "mptcp_lia", Algo: "lia", Registered: true},
	}}
	id := uint64(1)
	for c := 0; c < conns; c++ {
		for sf := 0; sf < perConn; sf++ {
			snap.Subflows = append(snap.Subflows, stats.Subflow{
				CC: "mptcp_olia", Algo: "olia", ID: id, Token: uint32(0x1000 + c), SubflowID: uint32(sf + 1),
				LocalID: uint8(sf), MPTCP: true,
				Local:  netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(sf), 1}), uint16(20000+c)),
				Remote: netip.MustParseAddrPort("10.1.0.1:5201"),
				Cwnd:   uint32(10 + sf), Ssthresh: 0x7fffffff, SRTT: 12345 * time.Microsecond, MinRTT: 10 * time.Millisecond,
				RTTVar: time.Millisecond, CAState: "open", InFlight: 5, Paths: uint32(perConn),
				Delivered: 100, Lost: 1, Retrans: 2, BytesAcked: 144800, BytesSent: 150000, PacingRate: 1e6,
				Coupled: 0.25 * float64(sf+1), CoupledName: "alpha", UpdatedNs: uint64(sf),
			})
			id++
		}
	}
	for p := 0; p < plain; p++ {
		snap.Subflows = append(snap.Subflows, stats.Subflow{
			CC: "mptcp_lia", Algo: "lia", ID: id, Local: netip.MustParseAddrPort("10.0.0.1:1"),
			Remote: netip.AddrPortFrom(netip.MustParseAddr("10.1.0.1"), uint16(p+1)), Cwnd: 7, CAState: "loss",
			CoupledName: "alpha",
		})
		id++
	}
	return snap
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func gather(t *testing.T, c prometheus.Collector) map[string][]*metricSample {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*metricSample{}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			labels, value := SampleOf(m)
			out[mf.GetName()] = append(out[mf.GetName()], &metricSample{labels: labels, value: value})
		}
	}
	return out
}

type metricSample struct {
	labels map[string]string
	value  float64
}

func TestCollectorSynthetic(t *testing.T) {
	c := NewCollector(stats.Static(synthetic(3, 2, 1)), Options{MaxSubflows: 100, Logger: quiet()})
	m := gather(t, c)

	if got := len(m["mptcp_cc_subflow_cwnd_segments"]); got != 7 {
		t.Errorf("cwnd series: %d, want 7", got)
	}
	for _, s := range m["mptcp_cc_subflow_cwnd_segments"] {
		if s.labels["token"] == "00001001" && s.labels["subflow"] == "2" {
			if s.value != 11 || s.labels["local"] != "10.0.1.1:20001" || s.labels["remote"] != "10.1.0.1:5201" || s.labels["algo"] != "olia" || s.labels["cc"] != "mptcp_olia" {
				t.Errorf("subflow 2 of 00001001: %+v", s)
			}
		}
	}
	for _, s := range m["mptcp_cc_subflow_srtt_seconds"] {
		if math.Abs(s.value-0.012345) > 1e-9 && s.labels["token"] != "" {
			t.Errorf("srtt %v, want 0.012345", s.value)
		}
	}
	for _, s := range m["mptcp_cc_subflow_ssthresh_segments"] {
		if s.labels["token"] != "" && !math.IsInf(s.value, 1) {
			t.Errorf("unset ssthresh exported as %v, want +Inf", s.value)
		}
	}
	agg := map[string]float64{}
	for _, name := range []string{"mptcp_cc_algorithm_connections", "mptcp_cc_algorithm_subflows"} {
		for _, s := range m[name] {
			agg[name+"/"+s.labels["cc"]] = s.value
		}
	}
	want := map[string]float64{
		"mptcp_cc_algorithm_connections/mptcp_olia": 3, "mptcp_cc_algorithm_subflows/mptcp_olia": 6,
		"mptcp_cc_algorithm_connections/mptcp_lia": 1, "mptcp_cc_algorithm_subflows/mptcp_lia": 1,
	}
	for k, v := range want {
		if agg[k] != v {
			t.Errorf("%s = %v, want %v", k, agg[k], v)
		}
	}
	if n := len(m["mptcp_cc_connection_coupled"]); n != 3 {
		t.Errorf("connection_coupled series: %d, want 3", n)
	}
	for _, s := range m["mptcp_cc_connection_coupled"] {
		// the most recently updated subflow (sf 2) carries 0.5
		if s.value != 0.5 || s.labels["quantity"] != "alpha" {
			t.Errorf("coupled %+v, want alpha 0.5", s)
		}
	}
	if v := m["mptcp_cc_subflow_series_dropped"][0].value; v != 0 {
		t.Errorf("dropped %v, want 0", v)
	}
	if v := m["mptcp_cc_algorithms_loaded"][0].value; v != 2 {
		t.Errorf("algorithms_loaded %v", v)
	}
	if len(m["mptcp_cc_build_info"]) != 1 {
		t.Error("no build_info")
	}
}

func TestCollectorBound(t *testing.T) {
	var logged strings.Builder
	c := NewCollector(stats.Static(synthetic(3, 2, 0)), Options{MaxSubflows: 1, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	for range 3 {
		m := gather(t, c)
		if n := len(m["mptcp_cc_subflow_cwnd_segments"]); n != 1 {
			t.Fatalf("cwnd series: %d, want 1", n)
		}
		if v := m["mptcp_cc_subflow_series_dropped"][0].value; v != 5 {
			t.Fatalf("dropped %v, want 5", v)
		}
		if v := m["mptcp_cc_connection_series_dropped"][0].value; v != 2 {
			t.Fatalf("connections dropped %v, want 2", v)
		}
		if s := m["mptcp_cc_connection_subflows"]; len(s) != 1 || s[0].value != 2 {
			t.Fatalf("connection_subflows %+v: want the one exported connection with its 2 subflows", s)
		}
		// aggregates stay complete
		for _, s := range m["mptcp_cc_algorithm_subflows"] {
			if s.labels["cc"] == "mptcp_olia" && s.value != 6 {
				t.Fatalf("aggregate subflows %v, want 6", s.value)
			}
		}
	}
	if n := strings.Count(logged.String(), "max_subflows"); n != 1 {
		t.Errorf("warning logged %d times, want once:\n%s", n, logged.String())
	}

	c = NewCollector(stats.Static(synthetic(3, 2, 0)), Options{MaxSubflows: 0, Logger: quiet()})
	m := gather(t, c)
	if n := len(m["mptcp_cc_subflow_cwnd_segments"]); n != 0 {
		t.Fatalf("max 0: %d cwnd series", n)
	}
	if v := m["mptcp_cc_subflow_series_dropped"][0].value; v != 6 {
		t.Fatalf("max 0: dropped %v, want 6", v)
	}
}

// A subflow id seen twice in one read (hash map iterated while it changes)
// must not break the scrape with a duplicate series.
func TestCollectorDuplicate(t *testing.T) {
	snap := synthetic(1, 2, 0)
	snap.Subflows = append(snap.Subflows, snap.Subflows[0])
	m := gather(t, NewCollector(stats.Static(snap), Options{MaxSubflows: 10, Logger: quiet()}))
	if n := len(m["mptcp_cc_subflow_cwnd_segments"]); n != 2 {
		t.Fatalf("%d series, want 2", n)
	}
}

type failing struct{}

func (failing) Read() (stats.Snapshot, error) { return stats.Snapshot{}, errors.New("boom") }

func TestCollectorSourceError(t *testing.T) {
	m := gather(t, NewCollector(failing{}, Options{MaxSubflows: 10, Logger: quiet()}))
	if v := m["mptcp_cc_scrape_error"][0].value; v != 1 {
		t.Fatalf("scrape_error %v, want 1", v)
	}
}

// The exposition follows the Prometheus naming conventions.
func TestLint(t *testing.T) {
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(NewCollector(stats.Static(withSched(synthetic(2, 2, 1))), Options{MaxSubflows: 10, Logger: quiet()}), reg))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	problems, err := promlint.New(resp.Body).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "mptcp_cc_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
	problems, err = testutil.CollectAndLint(NewCollector(stats.Static(withSched(synthetic(1, 2, 0))), Options{MaxSubflows: 1, Logger: quiet()}))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestTokenLabel(t *testing.T) {
	for _, c := range []struct {
		s    stats.Subflow
		want string
	}{
		{stats.Subflow{MPTCP: true, Token: 0xdeadbeef}, "deadbeef"},
		{stats.Subflow{MPTCP: true, Token: 0x1}, "00000001"},
		{stats.Subflow{MPTCP: false, Token: 0x1}, ""},
	} {
		if got := TokenLabel(&c.s); got != c.want || (c.s.MPTCP && got != fmt.Sprintf("%08x", c.s.Token)) {
			t.Errorf("TokenLabel(%x) = %q, want %q", c.s.Token, got, c.want)
		}
	}
}

func TestCheckListenAddress(t *testing.T) {
	for _, c := range []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:9464", false, true},
		{"[::1]:9464", false, true},
		{"localhost:9464", false, true},
		{"127.0.0.2:0", false, true},
		{"0.0.0.0:9464", false, false},
		{":9464", false, false},
		{"[::]:9464", false, false},
		{"192.0.2.1:9464", false, false},
		{"0.0.0.0:9464", true, true},
		{":9464", true, true},
		{"127.0.0.1", false, false},
		{"127.0.0.1:", false, false},
	} {
		err := CheckListenAddress(c.addr, c.remote)
		if (err == nil) != c.ok {
			t.Errorf("CheckListenAddress(%q, %v) = %v, want ok=%v", c.addr, c.remote, err, c.ok)
		}
		if err != nil && !c.ok && strings.Contains(err.Error(), "loopback") && !strings.Contains(err.Error(), "--web.allow-remote") {
			t.Errorf("error does not name the flag: %v", err)
		}
	}
}

// In-process cost of building and encoding 1,000 connections x 2 subflows
// (the kernel read is measured by the real-kernel benchmark).
func BenchmarkScrapeSynthetic(b *testing.B) {
	reg, err := NewRegistry()
	if err != nil {
		b.Fatal(err)
	}
	h := Handler(NewCollector(stats.Static(synthetic(1000, 2, 0)), Options{MaxSubflows: DefaultMaxSubflows, Logger: quiet()}), reg)
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
		b.SetBytes(int64(rec.Body.Len()))
	}
}

// BenchmarkCollectSynthetic is the same through the prometheus.Collector
// path (registry + promhttp), for comparison.
func BenchmarkCollectSynthetic(b *testing.B) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(stats.Static(synthetic(1000, 2, 0)), Options{MaxSubflows: DefaultMaxSubflows, Logger: quiet()}))
	for b.Loop() {
		mfs, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			_ = enc.Encode(mf)
		}
		b.SetBytes(int64(buf.Len()))
	}
}

// WriteText and Collect produce the same metric families, samples and
// values: the fast text path is the Collector, written differently.
func TestWriteTextMatchesCollect(t *testing.T) {
	for _, max := range []int{0, 3, 100} {
		snap := withSched(synthetic(4, 2, 2))
		snap.Subflows[1].Local = netip.MustParseAddrPort("[2001:db8::1]:443")
		var text bytes.Buffer
		if err := NewCollector(stats.Static(snap), Options{MaxSubflows: max, Logger: quiet()}).WriteText(&text); err != nil {
			t.Fatal(err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fromText, err := parser.TextToMetricFamilies(bytes.NewReader(text.Bytes()))
		if err != nil {
			t.Fatalf("max %d: the text does not parse: %v\n%s", max, err, text.String())
		}
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(NewCollector(stats.Static(snap), Options{MaxSubflows: max, Logger: quiet()}))
		fromReg, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		if len(fromReg) != len(fromText) {
			t.Errorf("max %d: %d families from Collect, %d from WriteText", max, len(fromReg), len(fromText))
		}
		for _, mf := range fromReg {
			name := mf.GetName()
			if name == "mptcp_cc_scrape_duration_seconds" {
				continue
			}
			tf := fromText[name]
			if tf == nil {
				t.Errorf("max %d: %s missing from WriteText", max, name)
				continue
			}
			if tf.GetType() != mf.GetType() || tf.GetHelp() != mf.GetHelp() {
				t.Errorf("%s: type/help differ", name)
			}
			want := samples(mf)
			got := samples(tf)
			if len(want) != len(got) {
				t.Errorf("max %d: %s: %d samples from Collect, %d from WriteText", max, name, len(want), len(got))
			}
			for k, v := range want {
				if g, ok := got[k]; !ok || (g != v && !(math.IsNaN(g) && math.IsNaN(v))) {
					t.Errorf("max %d: %s{%s} = %v in WriteText, %v in Collect", max, name, k, g, v)
				}
			}
		}
	}
}

func samples(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mf.Metric {
		var ls []string
		for _, l := range m.Label {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(ls)
		v := m.GetGauge().GetValue()
		if m.Counter != nil {
			v = m.Counter.GetValue()
		}
		out[strings.Join(ls, ",")] = v
	}
	return out
}
