// SPDX-License-Identifier: Apache-2.0

package linkem

// Helpers for the tests that need root: namespaces, paths and small traffic
// generators whose sockets are created inside the namespaces with netns.Do.

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"golang.org/x/sys/unix"
)

func needRoot(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t)
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun")
	}
}

// startPath starts a path that is closed when the test ends. Cleanups run
// last-in first-out, so it closes before its namespaces are deleted.
func startPath(t testing.TB, cfg PathConfig) *Path {
	t.Helper()
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close path %s: %v", cfg.Name, err)
		}
	})
	return p
}

// pathConfig is a path between ns1 and ns2 on 10.77.<n>.0/24.
func pathConfig(ns1, ns2 string, n int, fwd, rev DirectionConfig) PathConfig {
	sub := "10.77." + strconv.Itoa(n) + "."
	return PathConfig{
		Name: "p" + strconv.Itoa(n), NS1: ns1, NS2: ns2,
		Dev1: "lk" + strconv.Itoa(n) + "a", Dev2: "lk" + strconv.Itoa(n) + "b",
		Addr1:   netip.MustParsePrefix(sub + "1/24"),
		Addr2:   netip.MustParsePrefix(sub + "2/24"),
		Forward: fwd, Reverse: rev,
	}
}

// links lists the interface names in a namespace.
func links(t testing.TB, ns string) []string {
	t.Helper()
	out, err := netns.Output(ns, "ip", "-o", "link", "show")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			names = append(names, strings.TrimSuffix(f[1], ":"))
		}
	}
	return names
}

// inNS runs fn inside ns and fails the test on error.
func inNS(t testing.TB, ns string, fn func() error) {
	t.Helper()
	if err := netns.Do(ns, fn); err != nil {
		t.Fatal(err)
	}
}

// udpEcho runs an echo server on addr:port inside ns until the test ends.
func udpEcho(t testing.TB, ns string, addr netip.Addr, port int) {
	t.Helper()
	var c *net.UDPConn
	inNS(t, ns, func() (err error) {
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, uint16(port))))
		return err
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			c.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
}

// probeRTT sends n UDP probes from ns to an echo server, one every
// interval, and returns the round-trip times of the probes that came back,
// sorted. Probes carry a sequence number so a late reply is never matched
// with the wrong probe.
func probeRTT(t testing.TB, ns string, dst netip.AddrPort, n int, interval time.Duration) []time.Duration {
	t.Helper()
	var c *net.UDPConn
	inNS(t, ns, func() (err error) {
		c, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(dst))
		return err
	})
	defer c.Close()
	sent := make([]time.Time, n)
	var rtts []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64)
		for {
			m, err := c.Read(buf)
			now := time.Now()
			if err != nil {
				return
			}
			if m >= 8 {
				if seq := binary.BigEndian.Uint64(buf); seq < uint64(n) {
					rtts = append(rtts, now.Sub(sent[seq]))
				}
			}
		}
	}()
	msg := make([]byte, 64)
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint64(msg, uint64(i))
		sent[i] = time.Now()
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		time.Sleep(interval)
	}
	// Give the last replies time to come back, then stop the reader.
	time.Sleep(200 * time.Millisecond)
	c.SetReadDeadline(time.Now())
	<-done
	slices.Sort(rtts)
	return rtts
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))]
}

// tcpResult is what one bulk TCP transfer measured.
type tcpResult struct {
	goodput float64       // payload bits/s at the receiver after warm-up
	minRTT  time.Duration // sender's TCP_INFO min_rtt
	srtt    time.Duration // sender's smoothed RTT at the end
	window  time.Duration
}

// tcpBulk sends as fast as possible from ns1 to a listener on dst in ns2
// for warm+measure, and returns the receiver's goodput over the measure
// part only, so slow start does not count.
func tcpBulk(t testing.TB, ns1, ns2 string, dst netip.AddrPort, warm, measure time.Duration) tcpResult {
	t.Helper()
	var ln net.Listener
	inNS(t, ns2, func() (err error) {
		ln, err = net.Listen("tcp", dst.String())
		return err
	})
	defer ln.Close()

	type mark struct {
		at    time.Time
		bytes int64
	}
	marks := make(chan [2]mark, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			marks <- [2]mark{}
			return
		}
		defer c.Close()
		buf := make([]byte, 256<<10)
		var total int64
		var start mark
		var startAt = time.Now().Add(warm)
		for {
			n, err := c.Read(buf)
			total += int64(n)
			now := time.Now()
			if start.at.IsZero() && now.After(startAt) {
				start = mark{now, total}
			}
			if err != nil {
				marks <- [2]mark{start, {now, total}}
				return
			}
		}
	}()

	var c net.Conn
	inNS(t, ns1, func() (err error) {
		c, err = net.DialTimeout("tcp", dst.String(), 5*time.Second)
		return err
	})
	buf := make([]byte, 256<<10)
	deadline := time.Now().Add(warm + measure)
	c.SetWriteDeadline(deadline)
	for time.Now().Before(deadline) {
		if _, err := c.Write(buf); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("tcp write: %v", err)
			}
			break
		}
	}
	var res tcpResult
	if raw, err := c.(*net.TCPConn).SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) {
			if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
				res.minRTT = time.Duration(info.Min_rtt) * time.Microsecond
				res.srtt = time.Duration(info.Rtt) * time.Microsecond
			}
		})
	}
	// Reset rather than drain: the measurement window is already over, and
	// a queue full of data would otherwise delay the end by seconds.
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	m := <-marks
	if m[0].at.IsZero() {
		t.Fatal("tcp transfer ended before the measurement window")
	}
	res.window = m[1].at.Sub(m[0].at)
	res.goodput = float64(m[1].bytes-m[0].bytes) * 8 / res.window.Seconds()
	return res
}

// udpCount sends n datagrams of size bytes from ns1 to dst in ns2, paced
// at rate packets per second, and returns how many the receiver got and how
// long sending took.
func udpCount(t testing.TB, ns1, ns2 string, dst netip.AddrPort, n, size int, rate float64) (got int, sending time.Duration) {
	t.Helper()
	var rc *net.UDPConn
	inNS(t, ns2, func() (err error) {
		rc, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(dst))
		return err
	})
	defer rc.Close()
	rc.SetReadBuffer(4 << 20)
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			if _, err := rc.Read(buf); err != nil {
				return
			}
			mu.Lock()
			got++
			mu.Unlock()
		}
	}()

	var sc *net.UDPConn
	inNS(t, ns1, func() (err error) {
		sc, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(dst))
		return err
	})
	defer sc.Close()
	msg := make([]byte, size)
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := sc.Write(msg); err != nil && !errors.Is(err, syscall.ENOBUFS) {
			t.Fatal(err)
		}
		// Pace by schedule, not by per-packet sleeps, which Go rounds up.
		if ahead := time.Duration(float64(i+1)/rate*float64(time.Second)) - time.Since(start); ahead > time.Millisecond {
			time.Sleep(ahead)
		}
	}
	sending = time.Since(start)
	// Wait until nothing has arrived for a while.
	for last := -1; ; {
		time.Sleep(300 * time.Millisecond)
		mu.Lock()
		g := got
		mu.Unlock()
		if g == last {
			break
		}
		last = g
	}
	rc.Close()
	<-done
	return got, sending
}
