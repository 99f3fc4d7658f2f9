// SPDX-License-Identifier: Apache-2.0

package blocking_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/blocking"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
)

// measure sends 512 KiB of records over two emulated 4 Mbit/s paths with
// the given round-trip times, under the kernel's default scheduler, paced
// at 2 Mbit/s: below either path's rate, so no queue builds and nothing is
// lost, and what is left is the paths' own delays (a bulk sender would
// fill the drop-tail queues, and the blocking it then sees comes mostly
// from loss recovery and the queues' different fill levels).
func measure(t *testing.T, rtt0, rtt1 time.Duration) blocking.Result {
	t.Helper()
	const rate = 4e6
	n := testkernel.Net(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: rate, Delay: rtt0 / 2},
			{RateBits: rate, Delay: rtt1 / 2},
		},
		Subflows: true,
	})
	res, err := blocking.Run(blocking.Options{
		ServerNS: n.Server, ClientNS: n.Client,
		Listen: netip.AddrPortFrom(topo.ServerAddr, 0),
		Local:  topo.ClientAddr(0),
		MPTCP:  true,
		Send:   blocking.SendOptions{Bytes: 512 << 10, RateBits: rate / 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("RTT %v / %v: %d records in %v over %d subflows (%d packets captured); blocking %+v; delay %+v",
		rtt0, rtt1, len(res.Samples), res.Duration.Round(time.Millisecond), res.Subflows, res.Capture.Packets, res.Blocking, res.Delay)
	if res.Subflows != 2 {
		t.Errorf("%d subflows, want one per path", res.Subflows)
	}
	if res.Unmapped != 0 || res.Capture.Restamped != 0 || res.Capture.Malformed != 0 {
		t.Errorf("capture: %d unmapped bytes, %+v", res.Unmapped, res.Capture)
	}
	// A record is read after it arrived, and arrives after it was sent:
	// the capture's clock, the stream offsets and the join agree.
	for _, s := range res.Samples {
		if s.Blocking() < 0 || s.Arrived.Before(s.Sent) {
			t.Fatalf("record at %d: sent %v, arrived %v, read %v", s.Offset,
				s.Sent.Format(time.StampMicro), s.Arrived.Format(time.StampMicro), s.Read.Format(time.StampMicro))
		}
	}
	return res
}

// On the host's kernel (no scheduler hook: the default scheduler), two
// equal paths leave next to no blocking; a 20 ms path beside a 200 ms one
// makes the data sent on the fast path behind a record on the slow path
// wait up to the one-way difference, which the seed's worst-case model
// gives (90 ms here).
func TestHostBlockingSymmetricVsAsymmetric(t *testing.T) {
	if testing.Short() {
		t.Skip("timed transfers over emulated links")
	}
	sym := measure(t, 20*time.Millisecond, 20*time.Millisecond)
	asym := measure(t, 20*time.Millisecond, 200*time.Millisecond)
	model := blocking.WorstCase(blocking.ModelPath{RateBits: 4e6, RTT: 20 * time.Millisecond},
		blocking.ModelPath{RateBits: 4e6, RTT: 200 * time.Millisecond}, blocking.SeedPacketBytes)
	modelMs := float64(model) / float64(time.Millisecond)
	t.Logf("worst-case model for the asymmetric paths: %v", model)
	if sym.Blocking.P95 > 5 {
		t.Errorf("equal paths: 95th percentile blocking %.2f ms, want about 0", sym.Blocking.P95)
	}
	if asym.Blocking.P95 < modelMs/2 || asym.Blocking.P95 > modelMs+50 {
		t.Errorf("20 ms vs 200 ms: 95th percentile blocking %.1f ms, want about the model's %.0f ms", asym.Blocking.P95, modelMs)
	}
	if asym.Blocking.Mean < 10*max(sym.Blocking.Mean, 0.1) {
		t.Errorf("mean blocking %.2f ms with asymmetric paths, %.2f ms with equal ones: want far more", asym.Blocking.Mean, sym.Blocking.Mean)
	}
}
