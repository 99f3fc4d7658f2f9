// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/cpustat"
	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
)

// waitIdle waits until both directions have settled: every packet offered
// is delivered or dropped.
func waitIdle(t *testing.T, p *Path) (fwd, rev Counters) {
	t.Helper()
	settled := func(c Counters) bool {
		return c.SentPackets == c.DeliveredPackets+c.DroppedLoss+c.DroppedQueue+c.DroppedError
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		fwd, rev = p.Stats()
		if settled(fwd) && settled(rev) {
			return fwd, rev
		}
	}
	t.Fatalf("counters never settled: fwd %+v rev %+v", fwd, rev)
	return
}

// The measuring tests (delay, rate, loss, queue) run one at a time: on two
// cores a UDP blast in a parallel test starves the other path's release
// goroutine (a CI run saw 40 ms late releases and 20% less goodput), and
// the test would then measure the neighbour, not the emulator.
func TestPathDelay(t *testing.T) {
	needRoot(t)
	ns1, ns2 := testenv.Namespace(t, "lkem"), testenv.Namespace(t, "lkem")
	cfg := pathConfig(ns1, ns2, 1,
		DirectionConfig{Delay: 10 * time.Millisecond},
		DirectionConfig{Delay: 10 * time.Millisecond})
	p := startPath(t, cfg)
	if got, want := runtime.GOMAXPROCS(0), runtime.NumCPU()+2; got < want {
		t.Errorf("GOMAXPROCS %d while a path runs, want at least %d (a spare P per writer)", got, want)
	}
	dst := netip.AddrPortFrom(cfg.Addr2.Addr(), 7001)
	udpEcho(t, ns2, dst.Addr(), int(dst.Port()))

	// A probe round is timed: a round during which the host takes the
	// vCPUs away releases late (cpustat.Attempts). Too short is never the
	// host's doing and fails at once.
	probes := 0
	check := func(what string, want time.Duration) {
		t.Helper()
		cpustat.Attempts(t, 3, func(int) error {
			rtts := probeRTT(t, ns1, dst, 50, 10*time.Millisecond)
			probes += 50
			if len(rtts) != 50 {
				t.Fatalf("%s: %d of 50 probes came back on a lossless path", what, len(rtts))
			}
			med := pct(rtts, 0.5)
			t.Logf("%s: rtt min %v median %v p90 %v max %v (want %v)", what, rtts[0], med, pct(rtts, 0.9), rtts[len(rtts)-1], want)
			if rtts[0] < want {
				t.Fatalf("%s: rtt %v shorter than the configured %v", what, rtts[0], want)
			}
			if med > want+time.Millisecond {
				return fmt.Errorf("%s: median rtt %v more than 1 ms above %v", what, med, want)
			}
			return nil
		})
	}
	check("10ms+10ms", 20*time.Millisecond)

	// Live change: the forward direction grows to 25 ms.
	if err := p.SetForward(DirectionConfig{Delay: 25 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	check("25ms+10ms", 35*time.Millisecond)

	fwd, rev := waitIdle(t, p)
	n := uint64(probes)
	if fwd.SentPackets != n || rev.SentPackets != n || fwd.DeliveredPackets != n || rev.DeliveredPackets != n {
		t.Errorf("want exactly the %d probes and %d replies, got fwd %+v rev %+v", n, n, fwd, rev)
	}
	if fwd.DeliveredBytes != n*(20+8+64) {
		t.Errorf("forward delivered %d bytes, want %d (%d IPv4/UDP packets of 64 bytes)", fwd.DeliveredBytes, n*92, n)
	}
	t.Logf("release lateness: fwd mean %v max %v, rev mean %v max %v", fwd.MeanLate(), fwd.LateMax, rev.MeanLate(), rev.LateMax)
}

func TestPathRate(t *testing.T) {
	needRoot(t)
	ns1, ns2 := testenv.Namespace(t, "lkem"), testenv.Namespace(t, "lkem")
	const rate = 20_000_000
	cfg := pathConfig(ns1, ns2, 2,
		DirectionConfig{Rate: rate, Delay: 2 * time.Millisecond, QueuePackets: 100},
		DirectionConfig{Delay: 2 * time.Millisecond})
	p := startPath(t, cfg)

	// TCP payload per 1500-byte IP packet: 1500 - 20 (IP) - 32 (TCP with
	// timestamps) = 1448 bytes.
	want := rate * 1448.0 / 1500
	// Goodput over 2 s is a timing measurement (cpustat.Attempts).
	cpustat.Attempts(t, 3, func(int) error {
		before, _ := p.Stats()
		start := time.Now()
		res := tcpBulk(t, ns1, ns2, netip.AddrPortFrom(cfg.Addr2.Addr(), 7002), time.Second, 2*time.Second)
		after, _ := p.Stats()
		elapsed := time.Since(start)
		t.Logf("goodput %.2f Mbit/s (want %.2f), tcp min_rtt %v srtt %v, late releases max %v",
			res.goodput/1e6, want/1e6, res.minRTT, res.srtt, after.LateMax)
		// The link never delivers faster than its rate, whatever TCP or
		// the host does: not a timing figure, so it fails at once.
		ipRate := float64(after.DeliveredBytes-before.DeliveredBytes) * 8 / elapsed.Seconds()
		if ipRate > rate*1.01 {
			t.Fatalf("delivered %.2f Mbit/s of IP bytes on a %v Mbit/s link", ipRate/1e6, rate/1e6)
		}
		if math.Abs(res.goodput-want)/want > 0.10 {
			return fmt.Errorf("goodput %.2f Mbit/s not within 10%% of %.2f", res.goodput/1e6, want/1e6)
		}
		return nil
	})
	fwd, rev := waitIdle(t, p)
	t.Logf("fwd %+v", fwd)
	t.Logf("rev %+v", rev)
}

func TestPathLoss(t *testing.T) {
	needRoot(t)
	ns1, ns2 := testenv.Namespace(t, "lkem"), testenv.Namespace(t, "lkem")
	const loss, n = 0.05, 20000
	cfg := pathConfig(ns1, ns2, 3,
		DirectionConfig{Loss: loss, Seed: 1, Delay: time.Millisecond},
		DirectionConfig{})
	p := startPath(t, cfg)

	// Timed only in that the emulator must read every packet: if the host
	// stalls it for over 50 ms at 20,000 packets/s, the TUN queue overflows
	// before the emulator sees them (cpustat.Attempts). Its own counters
	// must agree with the receiver whatever the host does.
	cpustat.Attempts(t, 3, func(int) error {
		before, _ := p.Stats()
		got, _ := udpCount(t, ns1, ns2, netip.AddrPortFrom(cfg.Addr2.Addr(), 7003), n, 200, 20000)
		after, _ := waitIdle(t, p)
		sent := after.SentPackets - before.SentPackets
		delivered := after.DeliveredPackets - before.DeliveredPackets
		lost := after.DroppedLoss - before.DroppedLoss
		if delivered != uint64(got) || sent != delivered+lost || after.DroppedQueue != 0 {
			t.Fatalf("counters before %+v after %+v disagree with %d received", before, after, got)
		}
		if sent*228 != after.SentBytes-before.SentBytes {
			t.Fatalf("SentBytes grew by %d for %d packets, want 228 each", after.SentBytes-before.SentBytes, sent)
		}
		measured := 1 - float64(got)/n
		t.Logf("received %d of %d: loss %.4f (configured %v); the emulator read %d", got, n, measured, loss, sent)
		if sent != n {
			return fmt.Errorf("the emulator read %d of %d packets: the host dropped the rest before it", sent, n)
		}
		if math.Abs(measured-loss)/loss > 0.10 {
			return fmt.Errorf("measured loss %.4f not within 10%% of %v", measured, loss)
		}
		return nil
	})
}

func TestPathQueueOverflow(t *testing.T) {
	needRoot(t)
	ns1, ns2 := testenv.Namespace(t, "lkem"), testenv.Namespace(t, "lkem")
	const rate, limit = 10_000_000, 50
	cfg := pathConfig(ns1, ns2, 6,
		DirectionConfig{Rate: rate, QueuePackets: limit, Delay: time.Millisecond},
		DirectionConfig{})
	p := startPath(t, cfg)

	// The observer sees every packet offered, with the link's verdict,
	// and departures that never go backwards.
	var mu sync.Mutex
	var seen, refused, badSize int
	var lastDepart time.Time
	backwards := false
	p.ObserveForward(func(at time.Time, pkt []byte, accepted bool, depart time.Time) {
		mu.Lock()
		defer mu.Unlock()
		seen++
		if len(pkt) != 1000+28 {
			badSize++
		}
		if !accepted {
			refused++
			return
		}
		backwards = backwards || depart.Before(lastDepart) || depart.Before(at)
		lastDepart = depart
	})

	// 1028-byte IP packets at 2500/s offer 20.6 Mbit/s to a 10 Mbit/s link.
	const n, ipSize = 2000, 1000 + 28
	got, sending := udpCount(t, ns1, ns2, netip.AddrPortFrom(cfg.Addr2.Addr(), 7006), n, 1000, 2500)
	fwd, _ := waitIdle(t, p)
	p.ObserveForward(nil)
	mu.Lock()
	if seen != n || uint64(refused) != fwd.DroppedQueue || badSize != 0 || backwards {
		t.Errorf("observer: saw %d packets (%d not %d bytes), %d refused, departures backwards %v; counters %+v", seen, badSize, ipSize, refused, backwards, fwd)
	}
	mu.Unlock()
	// The link delivers at its rate while the sender runs, then drains the
	// full queue.
	want := rate*sending.Seconds()/8/ipSize + limit
	t.Logf("sent %d in %v, received %d (want %.0f), counters %+v", n, sending, got, want, fwd)
	if math.Abs(float64(got)-want)/want > 0.05 {
		t.Errorf("received %d packets, want %.0f within 5%%", got, want)
	}
	if fwd.SentPackets != n || fwd.DeliveredPackets != uint64(got) || fwd.DroppedQueue != uint64(n-got) || fwd.DroppedLoss != 0 {
		t.Errorf("counters %+v disagree with %d sent, %d received, all drops from the queue", fwd, n, got)
	}
}

func TestPathCloseRemovesDevices(t *testing.T) {
	needRoot(t)
	t.Parallel()
	ns1, ns2 := testenv.Namespace(t, "lkem"), testenv.Namespace(t, "lkem")
	// Packets wait 5 s in the delay line; Close must not wait for them.
	// Removing a device takes the kernel an RCU grace period or more, up to
	// half a second on a busy host: 1 s tells the two apart.
	cfg := pathConfig(ns1, ns2, 4, DirectionConfig{Delay: 5 * time.Second}, DirectionConfig{})
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			p.Close()
		}
	})
	if l := links(t, ns1); !slices.Contains(l, cfg.Dev1) {
		t.Fatalf("%s not in %s: %v", cfg.Dev1, ns1, l)
	}
	// A second path may not take the same device names.
	if _, err := Start(cfg); err == nil {
		t.Fatal("second Start with the same devices succeeded")
	}
	udpCount(t, ns1, ns2, netip.AddrPortFrom(cfg.Addr2.Addr(), 7004), 10, 100, 10000)
	begin := time.Now()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	if d := time.Since(begin); d > time.Second {
		t.Errorf("Close took %v: it waited for the delay line", d)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, ns := range []string{ns1, ns2} {
		if l := links(t, ns); !slices.Equal(l, []string{"lo"}) {
			t.Errorf("after Close %s still has %v", ns, l)
		}
	}
}

func TestPathStartFailureCleansUp(t *testing.T) {
	needRoot(t)
	t.Parallel()
	ns1, ns2 := testenv.Namespace(t, "lkem"), testenv.Namespace(t, "lkem")
	// The device in ns2 cannot be created ("lo" exists), after the one in
	// ns1 was: Start must remove that one again.
	cfg := pathConfig(ns1, ns2, 5, DirectionConfig{}, DirectionConfig{})
	cfg.Dev2 = "lo"
	if _, err := Start(cfg); err == nil {
		t.Fatal("Start succeeded with an existing device name")
	} else {
		t.Log(err)
	}
	// Fail later, configuring the second device after the first one is
	// up: new devices in ns2 get IPv6 disabled, so adding an IPv6 address
	// there is refused.
	inNS(t, ns2, func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0)
	})
	cfg = pathConfig(ns1, ns2, 5, DirectionConfig{}, DirectionConfig{})
	cfg.Addr1 = netip.MustParsePrefix("fd00:77::1/64")
	cfg.Addr2 = netip.MustParsePrefix("fd00:77::2/64")
	if _, err := Start(cfg); err == nil {
		t.Fatal("Start succeeded with IPv6 disabled in ns2")
	} else {
		t.Log(err)
	}
	cfg = pathConfig(ns1, "lkem-does-not-exist", 5, DirectionConfig{}, DirectionConfig{})
	if _, err := Start(cfg); err == nil {
		t.Fatal("Start succeeded with a missing namespace")
	}
	// The devices go when their files close; allow the kernel a moment to
	// finish unregistering them (once in CI a device was still listed
	// right after the failed Start returned).
	for _, ns := range []string{ns1, ns2} {
		l := links(t, ns)
		for deadline := time.Now().Add(2 * time.Second); !slices.Equal(l, []string{"lo"}) && time.Now().Before(deadline); l = links(t, ns) {
			time.Sleep(50 * time.Millisecond)
		}
		if !slices.Equal(l, []string{"lo"}) {
			t.Errorf("2 s after the failed Starts %s has %v", ns, l)
		}
	}
}

// An AQM-configured path forwards through its queue discipline and counts
// the AQM's drops: 1028-byte UDP packets at twice the 10 Mbit/s rate.
func TestPathAQM(t *testing.T) {
	needRoot(t)
	for i, kind := range []string{RED, CoDel, FQCoDel} {
		t.Run(kind, func(t *testing.T) {
			ns1, ns2 := testenv.Namespace(t, "lkem"), testenv.Namespace(t, "lkem")
			cfg := pathConfig(ns1, ns2, 31+i,
				DirectionConfig{Rate: 10_000_000, QueuePackets: 200, Delay: time.Millisecond, Seed: 1, AQM: AQM{Kind: kind}},
				DirectionConfig{AQM: AQM{Kind: kind}}) // unshaped: every packet passes at once
			p := startPath(t, cfg)
			const n = 2000
			got, sending := udpCount(t, ns1, ns2, netip.AddrPortFrom(cfg.Addr2.Addr(), 7031), n, 1000, 2500)
			fwd, rev := waitIdle(t, p)
			t.Logf("sent %d in %v, received %d; fwd %+v", n, sending, got, fwd)
			if fwd.SentPackets != n || fwd.DeliveredPackets != uint64(got) || fwd.DroppedQueue != uint64(n-got) || fwd.DroppedLoss != 0 {
				t.Errorf("counters %+v disagree with %d sent, %d received, all drops from the queue", fwd, n, got)
			}
			if fwd.DroppedAQM == 0 || got < n/3 {
				t.Errorf("%s: %d early drops, %d of %d received: want the AQM dropping and the link forwarding", kind, fwd.DroppedAQM, got, n)
			}
			if rev.DroppedQueue != 0 {
				t.Errorf("the unshaped reverse direction dropped: %+v", rev)
			}
		})
	}
}

// Close does not wait for the packets an AQM still holds.
func TestPathAQMCloseWhileQueued(t *testing.T) {
	needRoot(t)
	ns1, ns2 := testenv.Namespace(t, "lkem"), testenv.Namespace(t, "lkem")
	// 1 Mbit/s: 100 packets of 1028 bytes take 0.8 s to leave the queue.
	cfg := pathConfig(ns1, ns2, 34, DirectionConfig{Rate: 1_000_000, QueuePackets: 1000, AQM: AQM{Kind: FQCoDel}}, DirectionConfig{})
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var sc *net.UDPConn
	inNS(t, ns1, func() (err error) {
		sc, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(cfg.Addr2.Addr(), 7034)))
		return err
	})
	defer sc.Close()
	msg := make([]byte, 1000)
	for range 100 {
		sc.Write(msg)
	}
	time.Sleep(50 * time.Millisecond)
	if fwd, _ := p.Stats(); fwd.SentPackets == 0 || fwd.DeliveredPackets >= fwd.SentPackets {
		t.Fatalf("nothing held in the queue: %+v", fwd)
	}
	begin := time.Now()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d > time.Second {
		t.Errorf("Close took %v with packets queued", d)
	}
}
