// SPDX-License-Identifier: Apache-2.0

package sched_test

import (
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/schedmodel"
)

// noMetrics stops the namespaces' TCP from caching ssthresh per
// destination, so a transfer does not start where the previous one left.
func noMetrics(t *testing.T, n *topo.Net) {
	t.Helper()
	for _, ns := range []string{n.Client, n.Server} {
		if err := netns.Exec(ns, "sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1"); err != nil {
			t.Fatal(err)
		}
	}
}

// held is what the trace says the receiver held out of order: bytes the
// subflows had acknowledged beyond the connection-level snd_una (data
// that arrived but waits for a gap before it), averaged over the decisions
// and at most. A reinjected byte is acknowledged on two subflows and once
// at the connection level, so the difference also carries every
// duplicate acknowledged so far, a count that only grows; the smallest
// difference from each decision on is taken as that count (the receiver
// holds nothing at some point after, at the latest at the end).
func held(events []schedmodel.Trace) (avg, most float64) {
	if len(events) == 0 {
		return 0, 0
	}
	una0 := events[0].Conn.SndUna
	h := make([]float64, len(events))
	for j, e := range events {
		var acked uint64
		for i := 0; i < int(e.Conn.N); i++ {
			acked += e.Conn.Sf[i].BytesAcked
		}
		h[j] = float64(acked) - float64(e.Conn.SndUna-una0)
	}
	var total float64
	floor := h[len(h)-1]
	for j := len(h) - 1; j >= 0; j-- {
		floor = min(floor, h[j])
		total += h[j] - floor
		most = max(most, h[j]-floor)
	}
	return total / float64(len(h)), most
}

// daps on 8 Mbit/s at 20 ms beside 4 Mbit/s at 100 ms RTT: intact, little
// beyond the payload on the wire, the bytes split about by the rates
// (2:1), fewer segments arriving out of order at the server than under
// minrtt on the same paths (the delay difference is worth more than one
// of the kernel's 32 KB pushes, so the lead tells), and every decision
// replays through the model.
func TestGuestDAPS(t *testing.T) {
	vmtest.Guest(t)
	root := testkernel.PinRoot(t)
	daps := load(t, root, "daps", sched.Params{Trace: true})
	minrtt := load(t, root, "minrtt", sched.Params{Trace: true})
	n := testkernel.Net(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: 8e6, Delay: 10 * time.Millisecond, QueueBytes: 32 << 10},
			{RateBits: 4e6, Delay: 50 * time.Millisecond, QueueBytes: 32 << 10},
		},
		Subflows: true,
	})
	noMetrics(t, n)
	const payload = 4 << 20
	m := transfer(t, n, root, minrtt, "minrtt", schedmodel.Args{}, payload, nil)
	d := transfer(t, n, root, daps, "daps", schedmodel.Args{}, payload, nil)
	mAvg, mMax := held(m.events)
	dAvg, dMax := held(d.events)
	t.Logf("held out of order at the receiver (from the traces): minrtt %.0f bytes on average, %.0f at most; daps %.0f, %.0f",
		mAvg, mMax, dAvg, dMax)

	if float64(sum(d.wire)) > 1.1*payload {
		t.Errorf("daps put %d bytes on the wire for %d of payload: more than 1.1x", sum(d.wire), payload)
	}
	if share := float64(d.wire[0]) / float64(sum(d.wire)); share < 0.55 || share > 0.8 {
		t.Errorf("daps put %.0f%% of the bytes on the fast path: the rates (2:1) want about 67%%", 100*share)
	}
	if d.ofo*10 > m.ofo*9 {
		t.Errorf("daps: %d segments arrived out of order at the server, minrtt %d: want at least a tenth fewer", d.ofo, m.ofo)
	}
}

// papd on 4 Mbit/s paths of 50 ms and 200 ms RTT with a small server
// receive buffer (the seed's second table: buf <= RTT_max * T', where
// aggregation hurts): it ends up mostly on the 50 ms path, puts little
// beyond the payload on the wire (it may duplicate reinjections in slow
// start) and is not slower than minrtt by more than a margin; every
// decision replays through the model.
func TestGuestPAPD(t *testing.T) {
	vmtest.Guest(t)
	root := testkernel.PinRoot(t)
	papd := load(t, root, "papd", sched.Params{Trace: true})
	minrtt := load(t, root, "minrtt", sched.Params{Trace: true})
	n := testkernel.Net(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: 4e6, Delay: 25 * time.Millisecond, QueueBytes: 32 << 10},
			{RateBits: 4e6, Delay: 100 * time.Millisecond, QueueBytes: 32 << 10},
		},
		Subflows: true,
	})
	noMetrics(t, n)
	// 128 KiB: the window it advertises (a half to three quarters of it)
	// is below RTT_max * T' = 100 KB (200 ms at 500 KB/s) and above the
	// best path's BDP, 25 KB. Set before the server listens: a socket
	// takes its buffer sizes when it is created.
	if err := netns.Exec(n.Server, "sysctl", "-qw", "net.ipv4.tcp_rmem=4096 131072 131072"); err != nil {
		t.Fatal(err)
	}
	const payload = 2 << 20
	m := transfer(t, n, root, minrtt, "minrtt", schedmodel.Args{}, payload, nil)
	p := transfer(t, n, root, papd, "papd", schedmodel.Args{}, payload, nil)

	modes := map[uint64]int{}
	var mode uint64
	for _, e := range p.events {
		if e.Conn.Retrans != 0 {
			continue
		}
		w := e.After.W
		modes[w[schedmodel.PAPDWMode]]++
		if w[schedmodel.PAPDWMode] != mode {
			mode = w[schedmodel.PAPDWMode]
			best := uint64(0)
			for i := 0; i < int(e.Conn.N); i++ {
				best = max(best, schedmodel.PAPDRate(&e.Before, e.Conn.Sf[i].Id))
			}
			t.Logf("papd at %v: mode %d (1 redundant, 2 multipath, 3 best path); the period that ended: aggregate %d B/s, best path's filtered rate %d B/s",
				time.Duration(e.Conn.NowUs-p.events[0].Conn.NowUs)*time.Microsecond, mode, w[schedmodel.PAPDWAgg], best)
		}
	}
	t.Logf("papd get_send decisions by mode: redundant %d, multipath %d, best path %d",
		modes[schedmodel.PAPDRedundant], modes[schedmodel.PAPDMP], modes[schedmodel.PAPDBest])
	if modes[schedmodel.PAPDBest] == 0 {
		t.Error("papd never chose the best path alone")
	}
	if share := float64(p.wire[0]) / float64(sum(p.wire)); share < 0.8 {
		t.Errorf("papd put %.0f%% of the bytes on the best path: want most", 100*share)
	}
	if f := float64(sum(p.wire)) / payload; f > 1.5 {
		t.Errorf("papd put %.2fx the payload on the wire", f)
	}
	if limit := m.took*3/2 + time.Second; p.took > limit {
		t.Errorf("papd took %v, minrtt %v: more than 1.5x + 1 s", p.took, m.took)
	}
}
