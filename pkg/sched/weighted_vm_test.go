// SPDX-License-Identifier: Apache-2.0

package sched_test

import (
	"math/bits"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/schedmodel"
)

// weighted on two paths of 8 Mbit/s and 40 ms RTT, weights 3:1 given by
// endpoint: path 1's endpoint (id 1, the first the client has) weighs 3,
// path 0, where the connection starts from an address that is no endpoint,
// the default 1. Every transfer arrives intact, puts at most 1.1x the
// payload on the wire (beyond what retransmissions explain) and replays
// decision by decision through the model.
//
//   - both paths able to carry their share: the server's receive buffer
//     (32 KiB) holds the connection to a few Mbit/s, so both subflows have
//     window room at every decision and the weights alone split the data:
//     the bytes on the wire within 10% of 3:1 once both subflows can send
//     (path 0's share of what went before the join is taken out);
//   - path 1 saturated: with the usual buffers the connection could take
//     16 Mbit/s, whose 3/4 path 1 cannot carry; path 0 takes the rest,
//     well beyond its 1/4.
func TestGuestWeighted(t *testing.T) {
	vmtest.Guest(t)
	root := testkernel.PinRoot(t)
	args := schedmodel.Args{1, 3}
	name := load(t, root, "weighted", sched.Params{Trace: true, Args: args})
	n := network(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: 8e6, Delay: 20 * time.Millisecond},
			{RateBits: 8e6, Delay: 20 * time.Millisecond},
		},
		Subflows: true,
	})
	for _, ns := range []string{n.Client, n.Server} {
		sysctl(t, ns, "net.ipv4.tcp_no_metrics_save", "1")
	}

	t.Run("3:1", func(t *testing.T) {
		sysctl(t, n.Server, "net.ipv4.tcp_rmem", "4096 32768 32768")
		r := transfer(t, n, root, name, "weighted", args, 4<<20, nil)
		checkWire(t, r)
		checkEndpoints(t, r)
		alone := soloBytes(r)
		if alone >= r.wire[0] {
			t.Fatalf("%d bytes sent before the join, more than path 0's %d on the wire", alone, r.wire[0])
		}
		raw := float64(r.wire[1]) / float64(r.wire[0])
		ratio := float64(r.wire[1]) / float64(r.wire[0]-alone)
		t.Logf("weights 3:1, both paths with room: %d and %d bytes on the wire (%.3f:1), %d of path 0's sent before the join: %.3f:1 after it; in %v",
			r.wire[1], r.wire[0], raw, alone, ratio, r.took.Round(time.Millisecond))
		if ratio < 2.7 || ratio > 3.3 {
			t.Errorf("path 1 (weight 3) carried %.3f times what path 0 (weight 1) did once both could send: want 3 within 10%%", ratio)
		}
	})

	t.Run("saturated", func(t *testing.T) {
		r := transfer(t, n, root, name, "weighted", args, 4<<20, nil)
		checkWire(t, r)
		t.Logf("weights 3:1, path 1 saturated: %.1f%% on path 0 (weight 1), in %v", 100*r.share(0), r.took.Round(time.Millisecond))
		if s := r.share(0); s < 0.35 {
			t.Errorf("path 0 carried %.1f%% with path 1 saturated: the other subflow should take the rest, well beyond its 25%% share", 100*s)
		}
	})
}

// soloBytes is the data the connection sent before it had a second usable
// subflow: the initial subflow carries it alone, whatever the weights
// (the join's handshake: 48,432 bytes in the run of 2026-11-28).
func soloBytes(r run) uint64 {
	var first uint64
	seen := false
	for _, e := range r.events {
		if e.Conn.Retrans != 0 {
			continue
		}
		if !seen {
			first, seen = e.Conn.SndNxt, true
		}
		if bits.OnesCount32(usableMask(&e.Conn)) >= 2 {
			return e.Conn.SndNxt - first
		}
	}
	return 0
}

// checkEndpoints fails unless the snapshots saw the two subflows under
// endpoints 0 (the initial one, from an address that is no endpoint) and 1
// (the one the client's endpoint opened): the key weights are looked up by.
func checkEndpoints(t *testing.T, r run) {
	t.Helper()
	seen := map[uint32]bool{}
	for _, e := range r.events {
		for i := 0; i < int(e.Conn.N) && i < len(e.Conn.Sf); i++ {
			seen[e.Conn.Sf[i].Endpoint] = true
		}
	}
	if len(seen) != 2 || !seen[0] || !seen[1] {
		t.Errorf("endpoints in the snapshots: %v, want 0 and 1", seen)
	}
}
