// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// LISA: a subflow that joins a connection whose first subflow has a large
// window takes half of it instead of starting with its own initial window,
// and the donor gives that much up. Without LISA the newcomer starts at the
// initial window and nobody gives anything.
func TestLISAJoinTakesShare(t *testing.T) {
	root := testkernel.PinRoot(t)
	for _, lisa := range []bool{true, false} {
		sh := topo.Shaping{RateBits: 20e6, Delay: 20 * time.Millisecond, QueueBytes: 100 * 1500}
		// No subflow endpoint yet: the second path is added mid-transfer,
		// when the first subflow's window has grown.
		n := testkernel.Net(t, topo.Config{Paths: []int{0, 1}, Bottlenecks: []topo.Shaping{sh, sh}})
		// Traced, so the donor's repayment can be replayed through the model.
		name, tr := loadTracedParams(t, root, "olia", cc.Params{LISA: lisa, Trace: true})

		srv, c := testkernel.Transfer(t, n, xfer.Options{CC: name, For: 4 * time.Second})
		time.Sleep(1500 * time.Millisecond)
		before := testkernel.Subflows(t, root, name)
		if len(before) != 1 {
			t.Fatalf("want one subflow before the join, have %d", len(before))
		}
		if err := netns.Exec(n.Client, "ip", "mptcp", "endpoint", "add", topo.ClientAddr(1).String(), "dev", "p1", "subflow"); err != nil {
			t.Fatal(err)
		}
		var donor, joiner stats.Subflow
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			subs := testkernel.Subflows(t, root, name)
			if len(subs) == 2 {
				for _, s := range subs {
					if s.ID == before[0].ID {
						donor = s
					} else {
						joiner = s
					}
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no second subflow joined (have %d)", len(subs))
			}
		}
		if _, err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		events, err := tr.Stop()
		if err != nil {
			t.Fatal(err)
		}
		repaid := 0
		for i, e := range events {
			if e.Kind == cc.TraceLISA {
				checkLISARepay(t, i, e)
				repaid += int(e.Acked)
			}
		}
		t.Logf("lisa=%v: donor cwnd %d before the join; joiner took %d, donor gave %d",
			lisa, before[0].Cwnd, joiner.LISATaken, donor.LISAGiven)
		if !lisa {
			if joiner.LISATaken != 0 || donor.LISAGiven != 0 {
				t.Errorf("without LISA a window was shared: taken %d, given %d", joiner.LISATaken, donor.LISAGiven)
			}
			continue
		}
		t.Logf("lisa: donor ssthresh %d before, %d after; joiner cwnd %d ssthresh %d", before[0].Ssthresh, donor.Ssthresh, joiner.Cwnd, joiner.Ssthresh)
		if repaid != int(donor.LISAGiven) {
			t.Errorf("the donor repaid %d in traced steps, gave %d", repaid, donor.LISAGiven)
		}
		if joiner.LISATaken < 10 || joiner.LISATaken != donor.LISAGiven {
			t.Errorf("with LISA the joiner took %d and the donor gave %d; want equal shares of at least an initial window",
				joiner.LISATaken, donor.LISAGiven)
		}
		if 2*joiner.LISATaken > before[0].Cwnd*3/2 {
			t.Errorf("joiner took %d of a window that was %d shortly before: more than half", joiner.LISATaken, before[0].Cwnd)
		}
		// 1.5 s into the transfer the donor has left slow start (its first
		// loss ends it on this 100-packet queue): the newcomer starts in
		// congestion avoidance at its share, and the donor stays in it,
		// instead of slow-starting back to its old window.
		const infinite = 0x7fffffff
		if before[0].Ssthresh >= infinite || before[0].Cwnd < before[0].Ssthresh {
			t.Fatalf("donor still in slow start 1.5 s in (cwnd %d, ssthresh %d): the test needs a join after slow start", before[0].Cwnd, before[0].Ssthresh)
		}
		if joiner.Ssthresh > joiner.LISATaken {
			t.Errorf("joiner's ssthresh %d right after the join, want at most its share %d (congestion avoidance)", joiner.Ssthresh, joiner.LISATaken)
		}
		if donor.Ssthresh > before[0].Cwnd-donor.LISAGiven+10 {
			t.Errorf("donor's ssthresh %d after giving %d of a window of %d: it would slow-start back", donor.Ssthresh, donor.LISAGiven, before[0].Cwnd)
		}
	}
}
