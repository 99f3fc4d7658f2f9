// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"sync"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// generations counts the live subflows of name by the generation of the
// build that created them.
func generations(t *testing.T, root, name string) map[uint8]int {
	t.Helper()
	out := map[uint8]int{}
	for _, s := range testkernel.Subflows(t, root, name) {
		out[cc.Generation(s.ID)]++
	}
	return out
}

// An upgrade in place under 50 live two-subflow connections carrying data:
// none breaks, every byte arrives (up to the kernel's own wrong-bytes
// fault, counted as in the daemon's kill test), the subflows of the old
// build stay in the map throughout, connections opened after it run the
// new build, and both builds run side by side until the old one's last
// connection closes.
func TestUpgradeKeepsLiveConnections(t *testing.T) {
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 40e6)
	srv := testkernel.Serve(t, n)
	name := testkernel.Load(t, root, "lia", cc.Params{})

	loaded, err := cc.List(root)
	if err != nil || len(loaded) != 1 || !loaded[0].BuildRecorded || loaded[0].Build.Generation != 0 || loaded[0].Build.ABI == "" || !loaded[0].Current() {
		t.Fatalf("after load: %+v %v; want one registration of this build, generation 0, with its ABI", loaded, err)
	}
	before := loaded[0].Build

	const conns = 50
	before0 := testkernel.Anomalies(t, n.Client, n.Server)
	results := make([]testkernel.Outcome, conns)
	var wg sync.WaitGroup
	for i := range conns {
		c := testkernel.Start(t, n, srv, xfer.Options{CC: name, For: 15 * time.Second})
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Wait()
			results[i] = testkernel.Outcome{Res: res, Err: err}
		}()
	}
	// Every connection in the map, all of the first build, and their joins
	// given up to 10 s (a join the path manager is slow to open under load
	// does not make the test: the connections carrying data do).
	connections := func() (tokens, subflows int) {
		seen := map[uint32]bool{}
		for _, s := range testkernel.Subflows(t, root, name) {
			if cc.Generation(s.ID) == 0 {
				seen[s.Token] = true
				subflows++
			}
		}
		return len(seen), subflows
	}
	deadline := time.Now().Add(10 * time.Second)
	tokens, subflows := connections()
	for ; (tokens < conns || subflows < 2*conns) && time.Now().Before(deadline); tokens, subflows = connections() {
		time.Sleep(50 * time.Millisecond)
	}
	if tokens < conns {
		t.Fatalf("before the upgrade: %d connections of %d in the map (%d subflows)", tokens, conns, subflows)
	}
	t.Logf("before the upgrade: %d connections, %d subflows", tokens, subflows)
	ids := map[uint64]bool{}
	for _, s := range testkernel.Subflows(t, root, name) {
		ids[s.ID] = true
	}

	up, err := cc.Upgrade(name, root, true)
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if up.Skipped || !up.Recorded || up.From != before || up.To.Generation != 1 || up.To.ABI != before.ABI {
		t.Errorf("upgrade: %+v; want from %+v to generation 1 with the same ABI", up, before)
	}
	// The readers read the same map: every subflow of the old build is
	// still in it, with its id.
	now := map[uint64]bool{}
	for _, s := range testkernel.Subflows(t, root, name) {
		now[s.ID] = true
	}
	for id := range ids {
		if !now[id] {
			t.Fatalf("subflow %#x of a live connection left the map at the upgrade", id)
		}
	}
	if l, err := cc.List(root); err != nil || len(l) != 1 || l[0].Build.Generation != 1 || !l[0].Registered {
		t.Fatalf("after the upgrade: %+v %v", l, err)
	}

	// A connection opened now runs the new build, beside the old ones.
	fresh := testkernel.Start(t, n, srv, xfer.Options{CC: name, For: 2 * time.Second})
	deadline = time.Now().Add(5 * time.Second)
	for g := generations(t, root, name); g[1] < 2 || g[0] == 0; g = generations(t, root, name) {
		if time.Now().After(deadline) {
			t.Fatalf("subflows by generation after the upgrade: %v; want the new connection's 2 of generation 1 beside the old ones", g)
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := fresh.Wait()
	if err != nil {
		t.Fatalf("the connection opened after the upgrade: %v", err)
	}
	testkernel.Receipt(t, "the connection opened after the upgrade", res, 0)

	wg.Wait()
	// Wrong bytes are the kernel's (docs/kernel-faults.md section 1): an
	// upgrade swaps programs, never payload.
	sum, _ := testkernel.Across(t, "across the upgrade", results, before0, n.Client, n.Server)
	// The old build's last connection closed: only new-build subflows, if
	// any, are left.
	deadline = time.Now().Add(5 * time.Second)
	for g := generations(t, root, name); g[0] > 0; g = generations(t, root, name) {
		if time.Now().After(deadline) {
			t.Fatalf("subflows of the old build left after its connections closed: %v", g)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d connections across the upgrade: %.1f MB delivered", conns, float64(sum)/1e6)
}

// What upgrade refuses, and what it skips.
func TestUpgradeErrors(t *testing.T) {
	root := testkernel.PinRoot(t)
	if _, err := cc.Upgrade("t_nothing", root, false); err == nil {
		t.Error("upgrading what is not loaded succeeded")
	}
	name := testkernel.Load(t, root, "olia", cc.Params{})
	up, err := cc.Upgrade(name, root, false)
	if err != nil || !up.Skipped {
		t.Errorf("upgrading to the same build: %+v %v; want skipped", up, err)
	}
	if l, err := cc.List(root); err != nil || len(l) != 1 || l[0].Build.Generation != 0 {
		t.Errorf("after a skipped upgrade: %+v %v; want generation 0", l, err)
	}
	// Forced, it replaces the programs though the build is the same.
	if up, err := cc.Upgrade(name, root, true); err != nil || up.Skipped || up.To.Generation != 1 {
		t.Errorf("a forced upgrade: %+v %v; want generation 1", up, err)
	}
	if !cc.IsRegistered(name) {
		t.Errorf("%s is no longer registered after an upgrade", name)
	}
}
