// SPDX-License-Identifier: Apache-2.0

package daemon_test

import (
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/servetest"
	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// TestBenchDaemonScrape: the daemon's /metrics with 1,000 and with 10,000
// live MPTCP subflows (500 and 5,000 connections x 2 subflows: real
// connections between namespaces over unshaped veth, idle), scraped like
// Prometheus does, side by side; and the daemon's memory. Each number of
// subflows is scraped twice over the same connections: with every subflow
// exported, and as the daemon is configured by default (per-subflow
// series for the first metrics.DefaultMaxSubflows, aggregates for all).
// Targets: a scrape under 100 ms at 10,000 subflows as configured by
// default, RSS under 64 MiB at 1,000; every subflow exported is reported.
// MPTCP_CC_BENCH=1 runs it (make bench).
func TestBenchDaemonScrape(t *testing.T) {
	testenv.Bench(t)
	var rows []scrapeRow
	rows = append(rows, scrapeBench(t, 500, []int{1000})...)
	rows = append(rows, scrapeBench(t, 5000, []int{10000, metrics.DefaultMaxSubflows})...)
	fmt.Printf("\nmptcp-cc serve with idle MPTCP connections x 2 subflows (unshaped veth)\n")
	fmt.Printf("%-10s %-10s %-6s %10s %10s %10s %10s %12s %10s %10s\n", "subflows", "exported", "GET", "min", "median", "p90", "max", "body", "series", "VmRSS")
	for _, r := range rows {
		for _, m := range []struct {
			what string
			d    []time.Duration
			size string
		}{{"text", r.plain, fmt.Sprintf("%.1f MB", float64(r.size)/1e6)}, {"gzip", r.gz, fmt.Sprintf("%.2f MB", float64(r.gzSize)/1e6)}} {
			fmt.Printf("%-10d %-10d %-6s %10s %10s %10s %10s %12s %10d %7.1f MiB\n", 2*r.conns, min(r.exported, 2*r.conns), m.what, ms(m.d[0]), ms(pct(m.d, 50)),
				ms(pct(m.d, 90)), ms(m.d[len(m.d)-1]), m.size, r.series, r.rss)
		}
	}
	fmt.Printf("daemon VmRSS with no connection: %.1f MiB; targets: median scrape < 100 ms at 10,000 subflows with the default bound (%d exported), RSS < 64 MiB at 1,000\n\n", rows[0].rssIdle, metrics.DefaultMaxSubflows)
	for _, r := range rows {
		if r.exported != metrics.DefaultMaxSubflows {
			continue
		}
		if m := pct(r.plain, 50); m >= 100*time.Millisecond {
			t.Errorf("%d subflows: median scrape %v, want < 100 ms", 2*r.conns, m)
		}
		if m := pct(r.gz, 50); m >= 100*time.Millisecond {
			t.Errorf("%d subflows: median gzip scrape %v, want < 100 ms", 2*r.conns, m)
		}
	}
	if rows[0].rss >= 64 {
		t.Errorf("daemon RSS %.1f MiB at %d subflows, want < 64 MiB", rows[0].rss, 2*rows[0].conns)
	}
}

type scrapeRow struct {
	conns             int
	exported          int // the daemon's metrics.max_subflows
	plain, gz         []time.Duration
	size, gzSize      int
	series            int
	rssIdle, rss, hwm float64
}

// scrapeBench opens conns idle connections and, for each bound in turn,
// starts a daemon with metrics.max_subflows at it and times its scrapes.
func scrapeBench(t *testing.T, conns int, bounds []int) []scrapeRow {
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 0)
	name := testenv.Unique("t_bench_")
	testkernel.UnloadAtCleanup(t, root, name)
	var rows []scrapeRow
	var closeAll func()
	for i, bound := range bounds {
		r := scrapeRow{conns: conns, exported: bound}
		// The first daemon loads the CC; the next ones adopt it.
		d := startDaemon(t, fmt.Sprintf(`
bpffs: %s
on_exit: keep
algorithms: [{algo: olia, name: %s}]
metrics: {listen_address: "127.0.0.1:0", max_subflows: %d}
events: {namespaces: [%s]}
`, root, name, bound, n.Client))
		url := d.Ready()
		pid := d.Cmd.Process.Pid
		r.rssIdle, _ = procStatus(t, pid)
		if i == 0 {
			start := time.Now()
			closeAll = idleConnections(t, n, name, conns)
			defer closeAll()
			waitSubflows(t, url, name, 2*conns)
			t.Logf("%d connections x 2 subflows up in %v", conns, time.Since(start).Round(time.Millisecond))
		} else {
			waitSubflows(t, url, name, 2*conns)
		}

		// Scrapes: plain text, then gzip as Prometheus asks for it.
		var body string
		r.plain, r.size, body = scrapeTimes(t, url, 30, false)
		r.gz, r.gzSize, _ = scrapeTimes(t, url, 10, true)
		r.rss, r.hwm = procStatus(t, pid)
		r.series = strings.Count(body, "\nmptcp_cc_")
		if sub := len(regexp.MustCompile(`(?m)^mptcp_cc_subflow_cwnd_segments\{`).FindAllStringIndex(body, -1)); sub != min(bound, 2*conns) {
			t.Errorf("%d per-subflow cwnd series, want %d", sub, min(bound, 2*conns))
		}
		if code := d.Stop(syscall.SIGTERM); code != 0 {
			t.Errorf("SIGTERM: exit %d\n%s", code, d.Logs())
		}
		rows = append(rows, r)
	}
	return rows
}

// waitSubflows waits (up to 60 s) until the metrics at url count want live
// subflows of the olia loaded as name.
func waitSubflows(t *testing.T, url, name string, want int) {
	t.Helper()
	line := fmt.Sprintf(`mptcp_cc_algorithm_subflows{cc="%s",algo="olia"} %d`, name, want)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		body := servetest.Get(t, url)
		if strings.Contains(body, line) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %d subflows after 60 s:\n%s", want, servetest.Lines(body, "algorithm_subflows"))
		}
	}
}

// idleConnections opens conns idle MPTCP connections running the CC name
// from n's client to a server that holds every one open; the path manager
// adds each one's second subflow. closeAll closes both ends.
func idleConnections(t *testing.T, n *topo.Net, name string, conns int) (closeAll func()) {
	t.Helper()
	ln := testenv.Listen(t, n.Server, netip.AddrPortFrom(topo.ServerAddr, 0).String(), true)
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	var clients []net.Conn
	closeAll = func() {
		ln.Close()
		for _, c := range clients {
			c.Close()
		}
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}
	err := netns.Do(n.Client, func() error {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: topo.ClientAddr(0).AsSlice()}, Timeout: 5 * time.Second}
		d.SetMultipathTCP(true)
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
			})
			if serr != nil {
				return serr
			}
			return err
		}
		for i := 0; i < conns; i++ {
			c, err := d.Dial("tcp", ln.Addr().String())
			if err != nil {
				return fmt.Errorf("connection %d: %w", i, err)
			}
			clients = append(clients, c)
		}
		return nil
	})
	if err != nil {
		closeAll()
		t.Fatal(err)
	}
	return closeAll
}

func scrapeTimes(t *testing.T, url string, n int, compressed bool) ([]time.Duration, int, string) {
	t.Helper()
	tr := &http.Transport{DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var times []time.Duration
	size := 0
	var last string
	for i := 0; i < n; i++ {
		req, _ := http.NewRequest("GET", url, nil)
		if compressed {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		times = append(times, time.Since(start))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("scrape: %v %s", err, resp.Status)
		}
		size = len(raw)
		if compressed {
			zr, err := gzip.NewReader(strings.NewReader(string(raw)))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			last = string(b)
		} else {
			last = string(raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times, size, last
}

func pct(d []time.Duration, p int) time.Duration { return d[(len(d)-1)*p/100] }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

// procStatus returns VmRSS and VmHWM in MiB.
func procStatus(t *testing.T, pid int) (rss, hwm float64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			hwm = kb / 1024
		}
	}
	return rss, hwm
}
