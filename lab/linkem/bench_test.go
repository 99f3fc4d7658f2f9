// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"fmt"
	"math"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// TestBench compares plain veth with emulated paths side by side in one run
// (the machine is noisy, so only numbers from the same run are compared).
// It takes about 40 s and runs only when LINKEM_BENCH=1 (make bench):
//
//	LINKEM_BENCH=1 go test -run TestBench -v ./lab/linkem
//
// The traffic comes from goroutines of this test process, so the emulator
// competes with its own load for the same CPUs; a lab that runs its
// traffic in other processes can only do better.
//
// It fails if the goal is missed: with two 100 Mbit/s, 10 ms paths loaded
// at once, goodput within 10% of the rate, RTT within 1 ms of 20 ms, and
// 1% loss measured within 10% (relative).
func TestBench(t *testing.T) {
	testenv.LinkemBench(t)
	needRoot(t)

	const (
		warm, measure = 2 * time.Second, 4 * time.Second
		rate          = 100_000_000
		delay         = 10 * time.Millisecond
		rtt           = 2 * delay
		// TCP payload per 1500-byte packet (20 IP + 32 TCP header bytes).
		maxGoodput = rate * 1448.0 / 1500
	)
	type row struct{ name, goodput, rttP50, rttErr, rttP99, loss, late, cpu string }
	var rows []row
	defer func() {
		w := []int{0, 0, 0, 0, 0, 0, 0, 0}
		all := append([]row{{"case", "goodput Mbit/s", "RTT p50", "p50 - 2*Delay", "RTT p99", "loss meas/conf", "release late mean/max", "CPU"}}, rows...)
		cells := func(r row) []string {
			return []string{r.name, r.goodput, r.rttP50, r.rttErr, r.rttP99, r.loss, r.late, r.cpu}
		}
		for _, r := range all {
			for i, c := range cells(r) {
				w[i] = max(w[i], len(c))
			}
		}
		fmt.Printf("\nlinkem benchmark: one run, %d CPUs, GOMAXPROCS %d, traffic from this process\n", runtime.NumCPU(), runtime.GOMAXPROCS(0))
		for _, r := range all {
			var b strings.Builder
			for i, c := range cells(r) {
				fmt.Fprintf(&b, "%-*s  ", w[i], c)
			}
			fmt.Println(strings.TrimRight(b.String(), " "))
		}
	}()
	us := func(d time.Duration) string { return fmt.Sprintf("%.3f ms", d.Seconds()*1e3) }
	lateOf := func(p *Path) string {
		f, r := p.Stats()
		return fmt.Sprintf("%.0f/%.0f µs", ((f.MeanLate()+r.MeanLate())/2).Seconds()*1e6, max(f.LateMax, r.LateMax).Seconds()*1e6)
	}

	// (a) Plain veth: the machine's own ceiling and RTT floor.
	var vethRTT time.Duration
	{
		ns1, ns2 := testenv.Namespace(t, "lkem"), testenv.Namespace(t, "lkem")
		veth(t, ns1, ns2, "10.76.0.1/24", "10.76.0.2/24")
		echo := netip.MustParseAddrPort("10.76.0.2:7101")
		udpEcho(t, ns2, echo.Addr(), int(echo.Port()))
		idle := probeRTT(t, ns1, echo, 200, 5*time.Millisecond)
		vethRTT = pct(idle, 0.5)
		cpu := cpuMeter()
		res := tcpBulk(t, ns1, ns2, netip.MustParseAddrPort("10.76.0.2:7100"), warm, measure)
		rows = append(rows, row{"(a) veth, TCP / idle probes", fmt.Sprintf("%.0f", res.goodput/1e6),
			us(vethRTT), "-", us(pct(idle, 0.99)), "-", "-", fmt.Sprintf("%.0f%%", cpu())})
	}

	// (b) Two emulated 100 Mbit/s, 10 ms paths loaded at the same time by
	// one TCP flow each; the queue holds about one bandwidth-delay product.
	{
		ns1, ns2 := testenv.Namespace(t, "lkem"), testenv.Namespace(t, "lkem")
		dir := DirectionConfig{Rate: rate, Delay: delay, QueuePackets: 170}
		paths := []*Path{
			startPath(t, pathConfig(ns1, ns2, 11, dir, dir)),
			startPath(t, pathConfig(ns1, ns2, 12, dir, dir)),
		}
		var idle [2][]time.Duration
		for i, p := range paths {
			echo := netip.AddrPortFrom(p.cfg.Addr2.Addr(), 7201)
			udpEcho(t, ns2, echo.Addr(), int(echo.Port()))
			idle[i] = probeRTT(t, ns1, echo, 200, 5*time.Millisecond)
			rows = append(rows, row{fmt.Sprintf("(b) path %d idle probes", i+1), "-", us(pct(idle[i], 0.5)),
				us(pct(idle[i], 0.5) - rtt), us(pct(idle[i], 0.99)), "-", lateOf(p), "-"})
			if d := pct(idle[i], 0.5) - rtt; d < 0 || d > time.Millisecond {
				t.Errorf("path %d idle: RTT p50 %v not within 1 ms above %v", i+1, pct(idle[i], 0.5), rtt)
			}
		}
		var res [2]tcpResult
		var wg sync.WaitGroup
		cpu := cpuMeter()
		for i, p := range paths {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i] = tcpBulk(t, ns1, ns2, netip.AddrPortFrom(p.cfg.Addr2.Addr(), 7200), warm, measure)
			}()
		}
		wg.Wait()
		usage := fmt.Sprintf("%.0f%%", cpu())
		for i, p := range paths {
			// min_rtt is the RTT without queueing; the data packet's own
			// serialization (120 µs at 100 Mbit/s) is part of the ideal.
			ideal := rtt + 1500*8*time.Second/rate
			rows = append(rows, row{fmt.Sprintf("(b) path %d TCP, both loaded", i+1),
				fmt.Sprintf("%.1f (%.1f%% of max)", res[i].goodput/1e6, 100*res[i].goodput/maxGoodput),
				"min_rtt " + us(res[i].minRTT), us(res[i].minRTT - ideal), "srtt " + us(res[i].srtt), "-", lateOf(p), usage})
			if math.Abs(res[i].goodput-maxGoodput)/maxGoodput > 0.10 {
				t.Errorf("path %d: goodput %.1f Mbit/s not within 10%% of %.1f", i+1, res[i].goodput/1e6, maxGoodput/1e6)
			}
		}
	}

	// (c) 1% loss each way on two 100 Mbit/s, 10 ms paths: first RTT probes
	// on both at once (nothing else queues), then a UDP stream on both at
	// once whose loss is counted at the receiver.
	{
		ns1, ns2 := testenv.Namespace(t, "lkem"), testenv.Namespace(t, "lkem")
		var paths []*Path
		for i := range 2 {
			dir := DirectionConfig{Rate: rate, Delay: delay, Loss: 0.01, Seed: uint64(i + 1)}
			paths = append(paths, startPath(t, pathConfig(ns1, ns2, 21+i, dir, dir)))
		}
		var rtts [2][]time.Duration
		var wg sync.WaitGroup
		for i, p := range paths {
			echo := netip.AddrPortFrom(p.cfg.Addr2.Addr(), 7301)
			udpEcho(t, ns2, echo.Addr(), int(echo.Port()))
			wg.Add(1)
			go func() { defer wg.Done(); rtts[i] = probeRTT(t, ns1, echo, 400, 5*time.Millisecond) }()
		}
		wg.Wait()
		// 528-byte IP packets at 16000/s: 68 Mbit/s per path.
		const n, size, pps = 80_000, 500, 16000
		var got [2]int
		cpu := cpuMeter()
		for i, p := range paths {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], _ = udpCount(t, ns1, ns2, netip.AddrPortFrom(p.cfg.Addr2.Addr(), 7300), n, size, pps)
			}()
		}
		wg.Wait()
		usage := fmt.Sprintf("%.0f%%", cpu())
		for i, p := range paths {
			loss := 1 - float64(got[i])/n
			rows = append(rows, row{fmt.Sprintf("(c) path %d 1%% loss, probes then UDP", i+1), "-",
				us(pct(rtts[i], 0.5)), us(pct(rtts[i], 0.5) - rtt), us(pct(rtts[i], 0.99)),
				fmt.Sprintf("%.4f/0.01 (%+.1f%%)", loss, 100*(loss-0.01)/0.01), lateOf(p), usage})
			if math.Abs(loss-0.01)/0.01 > 0.10 {
				t.Errorf("path %d: measured loss %.4f not within 10%% of 1%%", i+1, loss)
			}
			if d := pct(rtts[i], 0.5) - rtt; d < 0 || d > time.Millisecond {
				t.Errorf("path %d at 1%% loss: RTT p50 %v not within 1 ms above %v", i+1, pct(rtts[i], 0.5), rtt)
			}
			// 1 - 0.99^2 of the probes are lost on the way out or back.
			if back := float64(len(rtts[i])) / 400; math.Abs(back-0.9801) > 0.03 {
				t.Errorf("path %d: %.1f%% of probes came back, want about 98%%", i+1, 100*back)
			}
		}
	}
	t.Logf("veth probe RTT p50 %v is the floor of what the probes can measure", vethRTT)
}

// veth joins ns1 and ns2 with a plain veth pair.
func veth(t testing.TB, ns1, ns2, addr1, addr2 string) {
	t.Helper()
	for _, c := range [][]string{
		{ns1, "ip", "link", "add", "lkv1", "type", "veth", "peer", "name", "lkv2", "netns", ns2},
		{ns1, "ip", "addr", "add", addr1, "dev", "lkv1"},
		{ns2, "ip", "addr", "add", addr2, "dev", "lkv2"},
		{ns1, "ip", "link", "set", "lkv1", "up"},
		{ns2, "ip", "link", "set", "lkv2", "up"},
	} {
		if err := netns.Exec(c[0], c[1:]...); err != nil {
			t.Fatal(err)
		}
	}
}

// cpuMeter returns a function that reports this process's CPU use (user +
// system, which includes the kernel's packet processing done inside its
// write calls) since the call, in percent of one CPU.
func cpuMeter() func() float64 {
	used := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start, u0 := time.Now(), used()
	return func() float64 { return 100 * float64(used()-u0) / float64(time.Since(start)) }
}

// TestBenchAQMCost measures the per-packet cost of the bottleneck's
// decision path, without I/O: Offer for drop-tail, Enqueue (and the
// dequeue it runs) for each AQM, on a fake clock. The load is four UDP
// flows of 1500-byte packets offered at 110% of a 100 Mbit/s link with a
// 1000-packet limit, so the queue stays full and every AQM drops. The
// costs are shown as ratios to drop-tail's in the same run (the machine is
// shared). It runs with the other benchmarks (LINKEM_BENCH=1):
//
//	LINKEM_BENCH=1 go test -run TestBenchAQMCost -v ./lab/linkem
func TestBenchAQMCost(t *testing.T) {
	testenv.LinkemBench(t)
	var pkts [4][]byte
	for i := range pkts {
		pkts[i] = udpPacket(1500, uint16(1000+i))
	}
	const gap = 1500 * 8 * time.Second / 100_000_000 * 10 / 11
	cost := func(kind string) testing.BenchmarkResult {
		return testing.Benchmark(func(b *testing.B) {
			cfg := DirectionConfig{Rate: 100_000_000, Delay: 10 * time.Millisecond, QueuePackets: 1000, Seed: 1, AQM: AQM{Kind: kind}}
			l, err := NewLink(cfg, t0)
			if err != nil {
				b.Fatal(err)
			}
			ref := &packet{}
			if l.Queued() {
				l.setSink(nullSink{})
			}
			now := t0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now = now.Add(gap)
				if l.Queued() {
					l.Enqueue(now, pkts[i%4], ref)
				} else {
					l.Offer(now, 1500)
				}
			}
		})
	}
	base := cost(DropTail)
	fmt.Printf("\nper-packet decision cost, one run, %d CPUs (shared machine: compare ratios, not ns)\n", runtime.NumCPU())
	fmt.Printf("%-9s  %9s  %7s  %9s\n", "queue", "ns/packet", "ratio", "allocs/op")
	for _, kind := range []string{DropTail, RED, CoDel, FQCoDel} {
		r := base
		if kind != DropTail {
			r = cost(kind)
		}
		name := kind
		if kind == DropTail {
			name = "drop-tail"
		}
		fmt.Printf("%-9s  %9d  %7.2f  %9d\n", name, r.NsPerOp(), float64(r.NsPerOp())/float64(base.NsPerOp()), r.AllocsPerOp())
	}
}

// nullSink discards a queue-mode Link's verdicts.
type nullSink struct{}

func (nullSink) send(any, time.Time) {}
func (nullSink) drop(any)            {}
