// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// maxPlausibleWindow is far above any window these paths need (a few
// hundred packets) and far below the kernel-written values the window guard
// exists for (hundreds of millions).
const maxPlausibleWindow = 1 << 20

// TestSoakWindowGuard runs long, lossy transfers (4 MPTCP connections of 2
// subflows, 3% loss, 20 ms RTT; thousands of losses) and checks that no
// decision the BPF program took saw an implausible window. Without the
// guard (bpf/include/cc_guard.h) this failed in each of four 150 s LIA runs on Linux
// 6.18 (the kernel stored ssthresh values like 667,073,280 after about 1 in
// 4,000 losses; see docs/algorithms.md, "The window guard"). Too long and
// too rare an event for CI: `make soak` runs it.
func TestSoakWindowGuard(t *testing.T) {
	testenv.Soak(t, "the 150 s soak")
	root := testkernel.PinRoot(t)
	n := testkernel.Net(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: 20e6, Delay: 10 * time.Millisecond, QueueBytes: 34 * 1500, Loss: 0.03, Seed: 7},
			{RateBits: 20e6, Delay: 10 * time.Millisecond, QueueBytes: 34 * 1500, Loss: 0.03, Seed: 8},
		},
		Subflows: true,
	})
	for _, a := range cc.Algorithms() {
		t.Run(a.Name, func(t *testing.T) {
			name, tr := loadTraced(t, root, a.Name)
			var repairs uint32
			flows := []flow{{path: 0, mptcp: true, cc: name}, {path: 0, mptcp: true, cc: name},
				{path: 1, mptcp: true, cc: name}, {path: 1, mptcp: true, cc: name}}
			run(t, n, flows, time.Second, 150*time.Second, func(end bool) {
				if end {
					for _, sf := range testkernel.Subflows(t, root, name) {
						repairs += sf.Repairs
					}
				}
			})
			events, err := tr.Stop()
			if err != nil {
				t.Fatal(err)
			}
			losses, bad := 0, 0
			for i, e := range events {
				if e.Kind == cc.TraceLoss {
					losses++
				}
				implausible := func(w uint32) bool { return w > maxPlausibleWindow && w != 0x7fffffff }
				if implausible(e.CwndBefore) || implausible(e.CwndAfter) || implausible(e.Ssthresh) || implausible(e.SsthreshAfter) {
					if bad == 0 {
						t.Errorf("event %d: an implausible window reached the algorithm: %+v", i, e)
					}
					bad++
				}
			}
			t.Logf("%s: %d decisions, %d losses, %d implausible, %d windows repaired by the guard (live subflows)",
				a.Name, len(events), losses, bad, repairs)
			if losses < 1000 {
				t.Fatalf("only %d losses: the soak did not exercise loss recovery", losses)
			}
		})
	}
}
