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
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/topo"
)

// TestBenchDaemonScrape: the daemon's /metrics with 1,000 live MPTCP
// connections x 2 subflows (real connections between namespaces over
// unshaped veth, idle), scraped like Prometheus does; and the daemon's
// memory. Targets: a scrape under 100 ms, RSS under 64 MiB.
// MPTCP_CC_BENCH=1 runs it (make bench).
func TestBenchDaemonScrape(t *testing.T) {
	testenv.Bench(t)
	const conns = 1000
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 0)
	name := testenv.Unique("t_bench_")
	testkernel.UnloadAtCleanup(t, root, name)
	d := startDaemon(t, fmt.Sprintf(`
bpffs: %s
on_exit: remove
algorithms: [{algo: olia, name: %s}]
metrics: {listen_address: "127.0.0.1:0"}
events: {namespaces: [%s]}
`, root, name, n.Client))
	url := d.Ready()
	pid := d.Cmd.Process.Pid
	rssIdle, _ := procStatus(t, pid)

	// The server holds every accepted connection open.
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
	defer func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()

	// 1,000 idle MPTCP connections running the CC; the path manager adds
	// each one's second subflow.
	var clients []net.Conn
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	start := time.Now()
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
		t.Fatal(err)
	}
	want := fmt.Sprintf(`mptcp_cc_algorithm_subflows{cc="%s",algo="olia"} %d`, name, 2*conns)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		body := servetest.Get(t, url)
		if strings.Contains(body, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %d subflows after 60 s:\n%s", 2*conns, servetest.Lines(body, "algorithm_subflows"))
		}
	}
	t.Logf("%d connections x 2 subflows up in %v", conns, time.Since(start).Round(time.Millisecond))

	// Scrapes: plain text, then gzip as Prometheus asks for it.
	plain, size, body := scrapeTimes(t, url, 30, false)
	gz, gzSize, _ := scrapeTimes(t, url, 10, true)
	rss, hwm := procStatus(t, pid)
	series := strings.Count(body, "\nmptcp_cc_")
	subSeries := len(regexp.MustCompile(`(?m)^mptcp_cc_subflow_cwnd_segments\{`).FindAllStringIndex(body, -1))
	if subSeries != 2*conns {
		t.Errorf("%d per-subflow cwnd series, want %d", subSeries, 2*conns)
	}

	fmt.Printf("\nmptcp-cc serve with %d MPTCP connections x 2 subflows (idle, unshaped veth)\n", conns)
	fmt.Printf("%-34s %10s %10s %10s %10s %12s\n", "", "min", "median", "p90", "max", "body")
	fmt.Printf("%-34s %10s %10s %10s %10s %12s\n", "GET /metrics (text)", ms(plain[0]), ms(pct(plain, 50)), ms(pct(plain, 90)), ms(plain[len(plain)-1]), fmt.Sprintf("%.1f MB", float64(size)/1e6))
	fmt.Printf("%-34s %10s %10s %10s %10s %12s\n", "GET /metrics (gzip)", ms(gz[0]), ms(pct(gz, 50)), ms(pct(gz, 90)), ms(gz[len(gz)-1]), fmt.Sprintf("%.2f MB", float64(gzSize)/1e6))
	fmt.Printf("%-34s %10d\n", "mptcp_cc_ series", series)
	fmt.Printf("%-34s %10.1f MiB\n", "daemon VmRSS idle (no connection)", rssIdle)
	fmt.Printf("%-34s %10.1f MiB\n", "daemon VmRSS after the scrapes", rss)
	fmt.Printf("%-34s %10.1f MiB\n", "daemon VmHWM (peak RSS)", hwm)
	fmt.Printf("targets: median scrape < 100 ms, RSS < 64 MiB\n\n")

	if m := pct(plain, 50); m >= 100*time.Millisecond {
		t.Errorf("median scrape %v, want < 100 ms", m)
	}
	if m := pct(gz, 50); m >= 100*time.Millisecond {
		t.Errorf("median gzip scrape %v, want < 100 ms", m)
	}
	if rss >= 64 {
		t.Errorf("daemon RSS %.1f MiB, want < 64 MiB", rss)
	}
	if code := d.Stop(syscall.SIGTERM); code != 0 {
		t.Errorf("SIGTERM: exit %d\n%s", code, d.Logs())
	}
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
