// SPDX-License-Identifier: Apache-2.0

package metrics_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// serve starts a metrics server over the pins under root on 127.0.0.1:0.
func serve(t *testing.T, root string, max int) string {
	t.Helper()
	reg, err := metrics.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	col := metrics.NewCollector(stats.Pinned{Root: root}, metrics.Options{MaxSubflows: max, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv, err := metrics.Listen("127.0.0.1:0", false, metrics.Handler(col, reg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + srv.Addr().String() + "/metrics"
}

type series struct {
	labels map[string]string
	value  float64
}

// scrape fetches and parses /metrics: family name -> series.
func scrape(t *testing.T, url string) map[string][]series {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	out := map[string][]series{}
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			out[name] = append(out[name], toSeries(m))
		}
	}
	return out
}

func toSeries(m *dto.Metric) series {
	labels, value := metrics.SampleOf(m)
	return series{labels: labels, value: value}
}

func ofCC(ss []series, name string) []series {
	var out []series
	for _, s := range ss {
		if s.labels["cc"] == name {
			out = append(out, s)
		}
	}
	return out
}

func valueOf(t *testing.T, m map[string][]series, family, cc string) float64 {
	t.Helper()
	s := ofCC(m[family], cc)
	if len(s) != 1 {
		t.Fatalf("%s{cc=%q}: %d series, want 1", family, cc, len(s))
	}
	return s[0].value
}

// kernelSubflow is the kernel's own view of one TCP socket (tcp_info, what
// `ss -ti` shows).
type kernelSubflow struct {
	cwnd float64
	srtt float64 // seconds
}

// kernelView lists, through sock_diag in the client namespace, every
// established TCP socket (MPTCP subflows included) toward dport, by local
// address.
func kernelView(t *testing.T, ns string, dport uint16) map[netip.AddrPort]kernelSubflow {
	t.Helper()
	view := map[netip.AddrPort]kernelSubflow{}
	for _, s := range diagDump(t, ns) {
		if s.State == sockdiag.Established && s.Remote.Port() == dport {
			view[s.Local] = kernelSubflow{cwnd: float64(s.Info.Snd_cwnd), srtt: float64(s.Info.Rtt) / 1e6}
		}
	}
	return view
}

func diagDump(t *testing.T, ns string) []sockdiag.Socket {
	t.Helper()
	list, err := sockdiag.Dump(ns, 0, sockdiag.Connected)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// mptcpTokens lists the local tokens of the MPTCP connections in a
// namespace, as their subflows report them through sock_diag.
func mptcpTokens(t *testing.T, ns string) map[string]bool {
	t.Helper()
	tokens := map[string]bool{}
	for _, s := range diagDump(t, ns) {
		if s.MPTCP && s.Token != 0 {
			tokens[fmt.Sprintf("%08x", s.Token)] = true
		}
	}
	return tokens
}

func within(v, lo, hi, rel, abs float64) bool {
	return v >= lo*(1-rel)-abs && v <= hi*(1+rel)+abs
}

// During a two-path MPTCP transfer, both subflows of the connection are
// exported with cwnd and srtt that agree with the kernel's own view (tcp_info),
// the aggregates count them, the bound cuts the per-subflow series and
// says so, and once the connection closes its series are gone.
func TestMetricsLiveTransfer(t *testing.T) {
	root := testkernel.PinRoot(t)
	n := testkernel.Net(t, topo.Config{
		Paths:       []int{0, 1},
		Bottlenecks: []topo.Shaping{{RateBits: 20e6}, {RateBits: 30e6}},
		Subflows:    true,
	})
	name := testkernel.Load(t, root, "olia", cc.Params{RSFTarget: cc.DefaultRSFTarget})
	url := serve(t, root, metrics.DefaultMaxSubflows)
	urlBound := serve(t, root, 1)

	m := scrape(t, url)
	if v := valueOf(t, m, "mptcp_cc_algorithm_subflows", name); v != 0 {
		t.Fatalf("subflows before any connection: %v", v)
	}
	if v := valueOf(t, m, "mptcp_cc_algorithm_registered", name); v != 1 {
		t.Fatalf("registered = %v", v)
	}
	if len(m["mptcp_cc_build_info"]) != 1 {
		t.Fatal("no build_info")
	}

	srv, c := testkernel.Transfer(t, n, xfer.Options{CC: name, For: 4 * time.Second})

	// Both subflows appear.
	deadline := time.Now().Add(3 * time.Second)
	for {
		m = scrape(t, url)
		if len(ofCC(m["mptcp_cc_subflow_cwnd_segments"], name)) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subflow series after 3 s: %+v", ofCC(m["mptcp_cc_subflow_cwnd_segments"], name))
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // past slow start

	// cwnd and srtt against tcp_info, sampled between two scrapes. cwnd moves
	// with every ACK, so a sample agrees if the kernel's falls within the two scrapes'
	// range widened by 30% (and 2 segments / 1 ms); most samples must.
	agreed, attempts := 0, 5
	var token string
	for a := 0; a < attempts; a++ {
		m1 := scrape(t, url)
		view := kernelView(t, n.Client, srv.Addr().Port())
		m2 := scrape(t, url)
		ok := true
		cw1, cw2 := ofCC(m1["mptcp_cc_subflow_cwnd_segments"], name), ofCC(m2["mptcp_cc_subflow_cwnd_segments"], name)
		rt1, rt2 := ofCC(m1["mptcp_cc_subflow_srtt_seconds"], name), ofCC(m2["mptcp_cc_subflow_srtt_seconds"], name)
		if len(cw1) != 2 || len(cw2) != 2 || len(rt1) != 2 || len(rt2) != 2 {
			t.Fatalf("attempt %d: want 2 subflows in each scrape, got %d/%d", a, len(cw1), len(cw2))
		}
		locals := map[netip.Addr]bool{}
		ids := map[string]bool{}
		for i, s := range cw1 {
			if token == "" {
				token = s.labels["token"]
			}
			if s.labels["token"] != token || s.labels["algo"] != "olia" || s.labels["remote"] != srv.Addr().String() {
				t.Fatalf("subflow labels %v: want token %s, algo olia, remote %s", s.labels, token, srv.Addr())
			}
			local, err := netip.ParseAddrPort(s.labels["local"])
			if err != nil {
				t.Fatalf("local label %q: %v", s.labels["local"], err)
			}
			locals[local.Addr()] = true
			ids[s.labels["subflow"]] = true
			k, ok2 := view[local]
			if !ok2 {
				t.Fatalf("sock_diag does not list the subflow %s: %+v\n%+v", local, view, diagDump(t, n.Client))
			}
			c2 := find(cw2, s.labels)
			r1, r2 := find(rt1, s.labels), find(rt2, s.labels)
			lo, hi := min(s.value, c2), max(s.value, c2)
			rlo, rhi := min(r1, r2), max(r1, r2)
			good := within(k.cwnd, lo, hi, 0.3, 2) && within(k.srtt, rlo, rhi, 0.3, 0.001)
			t.Logf("attempt %d subflow %d (%s): cwnd metrics %v..%v kernel %v; srtt metrics %.2f..%.2f ms kernel %.2f ms: %v",
				a, i, local, lo, hi, k.cwnd, rlo*1e3, rhi*1e3, k.srtt*1e3, good)
			ok = ok && good
		}
		if len(locals) != 2 || !locals[topo.ClientAddr(0)] || !locals[topo.ClientAddr(1)] || len(ids) != 2 {
			t.Fatalf("the two series are not the two paths' subflows: locals %v ids %v", locals, ids)
		}
		if ok {
			agreed++
		}
		time.Sleep(150 * time.Millisecond)
	}
	if agreed < 3 {
		t.Errorf("metrics agreed with the kernel in %d of %d samples, want at least 3", agreed, attempts)
	}
	if tokens := mptcpTokens(t, n.Client); len(tokens) > 0 && !tokens[token] {
		t.Errorf("token label %s is not among the client's MPTCP tokens %v", token, tokens)
	}

	m = scrape(t, url)
	if v := valueOf(t, m, "mptcp_cc_algorithm_subflows", name); v != 2 {
		t.Errorf("algorithm_subflows = %v, want 2", v)
	}
	if v := valueOf(t, m, "mptcp_cc_algorithm_connections", name); v != 1 {
		t.Errorf("algorithm_connections = %v, want 1", v)
	}
	if s := ofCC(m["mptcp_cc_connection_coupled"], name); len(s) != 1 || s[0].labels["quantity"] != "alpha" || s[0].labels["token"] != token {
		t.Errorf("connection_coupled: %+v", s)
	}
	if s := ofCC(m["mptcp_cc_connection_subflows"], name); len(s) != 1 || s[0].value != 2 {
		t.Errorf("connection_subflows: %+v", s)
	}
	for _, fam := range []string{"mptcp_cc_subflow_delivered_segments_total", "mptcp_cc_subflow_acked_bytes_total", "mptcp_cc_subflow_sent_bytes_total", "mptcp_cc_subflow_pacing_rate_bytes_per_second"} {
		for _, s := range ofCC(m[fam], name) {
			if s.value <= 0 {
				t.Errorf("%s%v = %v during a transfer", fam, s.labels, s.value)
			}
		}
	}
	if v := m["mptcp_cc_subflow_series_dropped"]; len(v) != 1 || v[0].value != 0 {
		t.Errorf("dropped without a bound: %+v", v)
	}

	// The bound: one per-subflow series, the other counted as dropped;
	// the aggregates stay complete.
	mb := scrape(t, urlBound)
	if s := ofCC(mb["mptcp_cc_subflow_cwnd_segments"], name); len(s) != 1 {
		t.Errorf("max-subflows 1: %d cwnd series", len(s))
	}
	if s := ofCC(mb["mptcp_cc_subflow_srtt_seconds"], name); len(s) != 1 {
		t.Errorf("max-subflows 1: %d srtt series", len(s))
	}
	if v := mb["mptcp_cc_subflow_series_dropped"]; len(v) != 1 || v[0].value != 1 {
		t.Errorf("max-subflows 1: dropped %+v, want 1", v)
	}
	if v := valueOf(t, mb, "mptcp_cc_algorithm_subflows", name); v != 2 {
		t.Errorf("max-subflows 1: aggregate subflows %v, want 2", v)
	}

	res, err := c.Wait()
	if err != nil {
		t.Fatalf("transfer: %v", err)
	}
	testkernel.Receipt(t, "transfer", res, 0)
	// Closed: the series disappear.
	deadline = time.Now().Add(3 * time.Second)
	for {
		m = scrape(t, url)
		if len(ofCC(m["mptcp_cc_subflow_cwnd_segments"], name)) == 0 && len(ofCC(m["mptcp_cc_connection_coupled"], name)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("series left 3 s after the connection closed: %+v", ofCC(m["mptcp_cc_subflow_cwnd_segments"], name))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v := valueOf(t, m, "mptcp_cc_algorithm_subflows", name); v != 0 {
		t.Errorf("algorithm_subflows after close = %v", v)
	}
}

func find(ss []series, labels map[string]string) float64 {
	for _, s := range ss {
		if s.labels["token"] == labels["token"] && s.labels["subflow"] == labels["subflow"] {
			return s.value
		}
	}
	return -1
}
