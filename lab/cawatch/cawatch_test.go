// SPDX-License-Identifier: Apache-2.0

package cawatch_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/cawatch"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
)

// TestWatchSeesItsNamespaceOnly runs a lossy MPTCP transfer with the
// kernel's reno and watches it with a limit of 2 packets, so that every
// window counts as implausible: the watch must count the reductions, see
// the subflows with their MPTCP parents' addresses, and see nothing in a
// namespace without traffic.
func TestWatchSeesItsNamespaceOnly(t *testing.T) {
	testenv.RequireRoot(t)
	lossy := topo.Shaping{RateBits: 20e6, Delay: 5 * time.Millisecond, QueueBytes: 34 * 1500, Loss: 0.03, Seed: 3}
	n := testkernel.Net(t, topo.Config{Paths: []int{0, 1}, Bottlenecks: []topo.Shaping{lossy, lossy}, Subflows: true})
	quiet := testenv.Namespace(t, "cwq")

	w, err := cawatch.Start(cawatch.Options{Namespace: n.Client, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	wq, err := cawatch.Start(cawatch.Options{Namespace: quiet, Limit: 2})
	if err != nil {
		w.Stop()
		t.Fatal(err)
	}
	srv := testkernel.Serve(t, n)
	_, runErr := testkernel.Run(n, srv, xfer.Options{CC: "reno", For: 3 * time.Second})
	c, ss, err := w.Stop()
	cq, ssq, errq := wq.Stop()
	if runErr != nil || err != nil || errq != nil {
		t.Fatal(runErr, err, errq)
	}
	t.Logf("watched: %+v, %d sightings; undo hook: %v", c, len(ss), w.NoUndo)
	if c.Calls[cawatch.State] == 0 || c.Calls[cawatch.PRR] == 0 || c.Calls[cawatch.Probe] == 0 {
		t.Errorf("a hook never ran on a lossy transfer: %+v", c.Calls)
	}
	if c.Reductions() == 0 || c.Entered[3] == 0 {
		t.Errorf("no window reduction counted on a path with 3%% loss: %+v", c.Entered)
	}
	if c.Implausible[cawatch.Probe] == 0 || len(ss) == 0 {
		t.Errorf("with a limit of 2 packets every window is implausible, yet none was reported: %+v", c.Implausible)
	}
	subflows := map[uint64]bool{}
	for _, s := range ss {
		if !s.MPTCP || s.CC != "reno" || s.Sock == 0 || s.SubflowCtx == 0 || s.MSK == 0 {
			t.Fatalf("a sighting without its MPTCP subflow, its parents or its CC: %+v", s)
		}
		subflows[s.Sock] = true
	}
	if len(subflows) != 2 {
		t.Errorf("sightings from %d sockets, want the connection's 2 subflows", len(subflows))
	}
	if cq.Calls != [4]uint64{} || len(ssq) != 0 {
		t.Errorf("the watch on a namespace without traffic saw %+v and %d sightings", cq, len(ssq))
	}
}

// TestNear: a value that is the low half of an address within 64 KiB of
// the socket's own is named as pointing into it; others are not.
func TestNear(t *testing.T) {
	s := cawatch.Sighting{Sock: 0xffff888127c2b000, SubflowCtx: 0xffff888100001000, MSK: 0xffff888105550000}
	for _, c := range []struct {
		v    uint32
		want string
	}{
		{0x27c2bb00, "sock+0xb00"},
		{0x27c2a000, "sock-0x1000"},
		{0x00001040, "subflow_ctx+0x40"},
		{0x05560000, ""}, // 64 KiB past the msk: not near
		{667073280 + 1<<20, ""},
	} {
		if got := s.Near(c.v); got != c.want {
			t.Errorf("Near(%#x) = %q, want %q", c.v, got, c.want)
		}
	}
	s.Ssthresh = 0x27c2bb00
	if d := s.Describe(1 << 20); !strings.Contains(d, "ssthresh=667073280!(=sock+0xb00)") {
		t.Errorf("Describe = %q, want the ssthresh marked and named as pointing into the socket", d)
	}
	if cawatch.Implausible(0x7fffffff, 10) || !cawatch.Implausible(11, 10) || cawatch.Implausible(10, 10) {
		t.Error("Implausible: want above the limit, TCP_INFINITE_SSTHRESH excepted")
	}
}
