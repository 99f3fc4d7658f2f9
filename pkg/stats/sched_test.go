// SPDX-License-Identifier: Apache-2.0

package stats_test

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// A scheduler's counters land on the subflow with the same token and
// addresses, never on another connection's subflow that shares a token
// (tokens are per namespace) or an id; what matches no live subflow is
// handed back.
func TestJoinSched(t *testing.T) {
	ap := netip.MustParseAddrPort
	subs := []stats.Subflow{
		{CC: "c", Token: 7, SubflowID: 1, MPTCP: true, Local: ap("10.0.0.1:1000"), Remote: ap("10.1.0.1:80")},
		{CC: "c", Token: 7, SubflowID: 2, MPTCP: true, Local: ap("10.0.1.1:1001"), Remote: ap("10.1.0.1:80")},
		// the same token in another namespace
		{CC: "c", Token: 7, SubflowID: 1, MPTCP: true, Local: ap("192.168.0.1:5"), Remote: ap("192.168.1.1:80")},
		// plain TCP: never scheduled by an MPTCP scheduler
		{CC: "c", Token: 0, SubflowID: 0, Local: ap("10.0.0.1:9"), Remote: ap("10.1.0.1:80"), Sched: &stats.SchedCounters{Name: "stale"}},
	}
	loaded := []sched.Loaded{{Name: "s1", Algorithm: "minrtt"}, {Name: "s2"}}
	counters := []sched.SubflowStats{
		{Scheduler: "s1", Token: 7, ID: 1, Local: ap("10.0.0.1:1000"), Remote: ap("10.1.0.1:80"), Sends: 10, Retrans: 1, BurstBytes: 1000},
		{Scheduler: "s1", Token: 7, ID: 2, Local: ap("10.0.1.1:1001"), Remote: ap("10.1.0.1:80"), Sends: 20, BurstBytes: 2000},
		// a closed subflow of the same connection
		{Scheduler: "s1", Token: 7, ID: 3, Local: ap("10.0.2.1:1002"), Remote: ap("10.1.0.1:80"), Sends: 5},
		// the second copy of a subflow already joined
		{Scheduler: "s2", Token: 7, ID: 1, Local: ap("10.0.0.1:1000"), Remote: ap("10.1.0.1:80"), Sends: 99},
		// same token, addresses of no live subflow
		{Scheduler: "s2", Token: 7, ID: 1, Local: ap("192.168.0.1:6"), Remote: ap("192.168.1.1:80"), Sends: 3},
	}
	unjoined := stats.JoinSched(subs, loaded, counters)
	want := []*stats.SchedCounters{
		{Name: "s1", Algo: "minrtt", Sends: 10, Retrans: 1, BurstBytes: 1000},
		{Name: "s1", Algo: "minrtt", Sends: 20, BurstBytes: 2000},
		nil, nil,
	}
	for i, w := range want {
		got := subs[i].Sched
		if (got == nil) != (w == nil) || got != nil && *got != *w {
			t.Errorf("subflow %d (%v): %+v, want %+v", i, subs[i].Local, got, w)
		}
	}
	if len(unjoined) != 3 || unjoined[0].ID != 3 || unjoined[1].Sends != 99 || unjoined[2].Sends != 3 {
		t.Errorf("unjoined %+v", unjoined)
	}
}

// Without any scheduler pinned (this machine has no scheduler hook) the
// snapshot has none and no error; the caller's namespace scheduler is the
// kernel's; a namespace that does not exist is named in the error while
// the rest is read.
func TestPinnedSchedulers(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	snap, err := stats.Pinned{Root: filepath.Join(dir, "cc"), SchedRoot: filepath.Join(dir, "sched")}.Read()
	if err != nil || len(snap.Schedulers) != 0 || len(snap.SchedSubflows) != 0 || len(snap.Netns) != 0 {
		t.Fatalf("Read = %+v, %v; want empty, nil", snap, err)
	}
	want, err := sched.Current("")
	if err != nil {
		t.Skipf("no MPTCP here: %v", err)
	}
	missing := testenv.Unique("mptcp-cc-none-")
	snap, err = stats.Pinned{Root: filepath.Join(dir, "cc"), Netns: []string{missing, ""}}.Read()
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("error %v; want one naming %s", err, missing)
	}
	if len(snap.Netns) != 1 || snap.Netns[0] != (stats.NetnsScheduler{Netns: "", Scheduler: want}) {
		t.Errorf("namespaces %+v; want the own one with %s", snap.Netns, want)
	}
}
