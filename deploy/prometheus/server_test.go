// SPDX-License-Identifier: Apache-2.0

package prometheus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/daemon"
)

// startDaemon runs `mptcp-cc serve` in-process with algo loaded as name
// under root, metrics on a loopback port of the kernel's choice; it stops
// at cleanup, removing what it loaded (on_exit remove).
func startDaemon(t *testing.T, root, algo, name string) string {
	t.Helper()
	testkernel.UnloadAtCleanup(t, root, name)
	off := false
	cfg := daemon.Config{
		BPFFS:      root,
		OnExit:     daemon.OnExitRemove,
		Algorithms: []daemon.Algorithm{{Algo: algo, Name: name}},
		Metrics:    daemon.Metrics{ListenAddress: "127.0.0.1:0"},
		// The host's path-manager events are not this test's business.
		Events: daemon.Events{Enabled: &off},
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		done <- daemon.Run(ctx, cfg, daemon.Options{Logger: log, Ready: func(a net.Addr) { ready <- a }})
	}()
	select {
	case a := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("the daemon's exit: %v", err)
			}
		})
		return a.String()
	case err := <-done:
		cancel()
		t.Fatalf("the daemon did not start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the daemon was not ready in 30 s")
	}
	return ""
}

// freePort returns a loopback port nothing listens on now. Prometheus
// cannot be told to pick one and report it, so there is a window in which
// something else may take it: startPrometheus tries again then.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type promServer struct {
	base string // http://127.0.0.1:PORT
	log  *testenv.SyncBuffer
}

// startPrometheus runs Debian's prometheus with every rule file of this
// directory, scraping target every second, its database in a temporary
// directory; it is killed at cleanup.
func startPrometheus(t *testing.T, target string) *promServer {
	t.Helper()
	bin := testenv.RequireTool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	var rulePaths []string
	for _, f := range ruleFiles(t) {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		rulePaths = append(rulePaths, strconv.Quote(abs))
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%s]
scrape_configs:
  - job_name: mptcp-cc
    static_configs:
      - targets: [%q]
`, strings.Join(rulePaths, ", "), target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		log := &testenv.SyncBuffer{}
		cmd := exec.Command(bin, "--config.file="+cfgPath,
			"--storage.tsdb.path="+filepath.Join(dir, fmt.Sprintf("data%d", attempt)),
			"--web.listen-address="+addr)
		cmd.Stdout, cmd.Stderr = log, log
		// Its own process group, so that nothing it started outlives it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		})
		p := &promServer{base: "http://" + addr, log: log}
		if p.ready(t, exited) {
			return p
		}
		if !strings.Contains(log.String(), "address already in use") || attempt == 3 {
			t.Fatalf("prometheus exited:\n%s", log.String())
		}
	}
}

// ready waits until the server answers /-/ready (true) or exits (false).
func (p *promServer) ready(t *testing.T, exited <-chan struct{}) bool {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return false
		default:
		}
		if resp, err := http.Get(p.base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready in 30 s:\n%s", p.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) value(t *testing.T) float64 {
	t.Helper()
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		t.Fatalf("sample value %v: %v", s.Value, err)
	}
	return v
}

// get calls the HTTP API at path and decodes its data.
func (p *promServer) get(t *testing.T, path string, data any) {
	t.Helper()
	resp, err := http.Get(p.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if r.Status != "success" {
		t.Fatalf("GET %s: %s", path, r.Error)
	}
	if err := json.Unmarshal(r.Data, data); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// query runs an instant query.
func (p *promServer) query(t *testing.T, q string) []sample {
	t.Helper()
	var data struct {
		Result []sample `json:"result"`
	}
	p.get(t, "/api/v1/query?query="+url.QueryEscape(q), &data)
	return data.Result
}

// await runs q until ok accepts its result, for at most limit.
func (p *promServer) await(t *testing.T, q string, limit time.Duration, ok func([]sample) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		res := p.query(t, q)
		if ok(res) {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("%s after %v: %+v\nprometheus:\n%s", q, limit, res, p.log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A real Prometheus scrapes a real daemon during a two-subflow MPTCP
// transfer under a coupled CC: it sees both subflows, the recording rules
// evaluate over them, every rule is healthy, and once the connection is
// closed its series are gone from instant queries (staleness).
func TestPrometheusScrapesDaemon(t *testing.T) {
	root := testkernel.PinRoot(t)
	name := testenv.Unique("t_prom_")
	target := startDaemon(t, root, "olia", name)
	p := startPrometheus(t, target)

	// Prometheus hands new targets to its scrapers in batches, the first
	// one about 5 s after it starts: wait for it, so that the transfer is
	// seen from its start.
	took := p.await(t, `up{job="mptcp-cc"}`, 30*time.Second, func(res []sample) bool { return len(res) == 1 && res[0].value(t) == 1 })
	t.Logf("first scrape of the daemon %v after prometheus was ready", took.Round(10*time.Millisecond))

	n := testkernel.TwoPaths(t, 20e6)
	_, c := testkernel.Transfer(t, n, xfer.Options{CC: name, For: 8 * time.Second})

	cwnd := fmt.Sprintf(`mptcp_cc_subflow_cwnd_segments{cc=%q}`, name)
	took = p.await(t, cwnd, 10*time.Second, func(res []sample) bool {
		ids := map[string]bool{}
		for _, s := range res {
			ids[s.Metric["subflow"]] = true
		}
		return len(ids) == 2
	})
	t.Logf("both subflows in Prometheus %v after the transfer started", took.Round(10*time.Millisecond))

	// The rates need two samples of each counter.
	p.await(t, fmt.Sprintf(`instance_cc:mptcp_cc_subflow_acked_bytes:rate1m{cc=%q,job="mptcp-cc"}`, name), 5*time.Second,
		func(res []sample) bool { return len(res) == 1 && res[0].value(t) > 0 })
	p.await(t, fmt.Sprintf(`instance_cc:mptcp_cc_algorithm_cwnd_segments:mean{cc=%q}`, name), 5*time.Second,
		func(res []sample) bool { return len(res) == 1 && res[0].value(t) >= 1 })
	// The daemon sees only its private pin root: the fleet is this transfer.
	p.await(t, `algo:mptcp_cc_algorithm_subflows:sum{algo="olia"}`, 5*time.Second,
		func(res []sample) bool { return len(res) == 1 && res[0].value(t) == 2 })

	var rules struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	p.get(t, "/api/v1/rules", &rules)
	count := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			count++
			if r.Health != "ok" {
				t.Errorf("rule %s: health %q: %s", r.Name, r.Health, r.LastError)
			}
		}
	}
	if want := len(rulesOf(t)); count != want {
		t.Errorf("prometheus loaded %d rules, the files have %d", count, want)
	}

	res, err := c.Wait()
	if err != nil {
		t.Fatalf("transfer: %v", err)
	}
	testkernel.Receipt(t, "transfer", res, 0)
	gone := p.await(t, cwnd, 20*time.Second, func(res []sample) bool { return len(res) == 0 })
	t.Logf("the closed connection's series left instant queries %v after the transfer ended", gone.Round(10*time.Millisecond))
}
