// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"errors"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// withSched adds two loaded schedulers to a synthetic snapshot: s_minrtt
// has counters for both subflows of the first connection (joined, as
// stats.Pinned joins them) and for a closed subflow; s_idle has none. The
// own namespace and lab-c use them.
func withSched(snap stats.Snapshot) stats.Snapshot {
	snap.Schedulers = []sched.Loaded{
		{Name: "s_idle", Algorithm: "minrtt", Registered: false},
		{Name: "s_minrtt", Algorithm: "minrtt", Registered: true, Params: sched.Params{Trace: true, Args: [6]uint32{3, 0, 0, 0, 0, 7}}},
	}
	for i := range snap.Subflows[:2] {
		s := &snap.Subflows[i]
		snap.SchedSubflows = append(snap.SchedSubflows, sched.SubflowStats{
			Scheduler: "s_minrtt", Token: s.Token, ID: s.SubflowID, Local: s.Local, Remote: s.Remote,
			Sends: uint64(100 * (i + 1)), Retrans: uint64(i), BurstBytes: uint64(64000 * (i + 1)),
		})
	}
	closed := snap.SchedSubflows[0]
	closed.ID, closed.Local, closed.Sends, closed.Retrans, closed.BurstBytes = 9, closed.Remote, 1, 1, 10
	snap.SchedSubflows = append(snap.SchedSubflows, closed)
	stats.JoinSched(snap.Subflows, snap.Schedulers, snap.SchedSubflows)
	snap.Netns = []stats.NetnsScheduler{{Netns: "", Scheduler: "default"}, {Netns: "lab-c", Scheduler: "s_minrtt"}}
	return snap
}

func TestCollectorSchedulers(t *testing.T) {
	m := gather(t, NewCollector(stats.Static(withSched(synthetic(2, 2, 0))), Options{MaxSubflows: 100, Logger: quiet()}))
	value := func(name string, labels map[string]string) (float64, bool) {
		t.Helper()
	next:
		for _, s := range m[name] {
			for k, v := range labels {
				if s.labels[k] != v {
					continue next
				}
			}
			return s.value, true
		}
		return 0, false
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"mptcp_cc_schedulers_loaded", nil, 2},
		{"mptcp_cc_scheduler_info", map[string]string{"scheduler": "s_minrtt", "algo": "minrtt", "trace": "true", "args": "3,0,0,0,0,7"}, 1},
		{"mptcp_cc_scheduler_registered", map[string]string{"scheduler": "s_minrtt"}, 1},
		{"mptcp_cc_scheduler_registered", map[string]string{"scheduler": "s_idle"}, 0},
		// the closed subflow counts in the scheduler's sums
		{"mptcp_cc_scheduler_decisions_total", map[string]string{"scheduler": "s_minrtt", "kind": "send"}, 301},
		{"mptcp_cc_scheduler_decisions_total", map[string]string{"scheduler": "s_minrtt", "kind": "retrans"}, 2},
		{"mptcp_cc_scheduler_burst_bytes_total", map[string]string{"scheduler": "s_minrtt"}, 192010},
		{"mptcp_cc_scheduler_decisions_total", map[string]string{"scheduler": "s_idle", "kind": "send"}, 0},
		{"mptcp_cc_netns_scheduler_info", map[string]string{"netns": "host", "scheduler": "default"}, 1},
		{"mptcp_cc_netns_scheduler_info", map[string]string{"netns": "lab-c", "scheduler": "s_minrtt"}, 1},
		{"mptcp_cc_subflow_scheduler_decisions_total", map[string]string{"token": "00001000", "subflow": "2", "scheduler": "s_minrtt", "kind": "send", "cc": "mptcp_olia"}, 200},
		{"mptcp_cc_subflow_scheduler_decisions_total", map[string]string{"token": "00001000", "subflow": "2", "kind": "retrans"}, 1},
		{"mptcp_cc_subflow_scheduler_burst_bytes_total", map[string]string{"token": "00001000", "subflow": "1", "scheduler": "s_minrtt"}, 64000},
	} {
		got, ok := value(c.name, c.labels)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	// Only the two live, scheduled subflows have per-subflow scheduler
	// series; the second connection's subflows have none.
	if n := len(m["mptcp_cc_subflow_scheduler_burst_bytes_total"]); n != 2 {
		t.Errorf("%d per-subflow burst series, want 2", n)
	}
	if n := len(m["mptcp_cc_subflow_scheduler_decisions_total"]); n != 4 {
		t.Errorf("%d per-subflow decision series, want 4", n)
	}

	// Where nothing of ours schedules (this machine: no hook), the
	// scheduler families are empty but for the count, which says 0.
	m = gather(t, NewCollector(stats.Static(synthetic(1, 2, 0)), Options{MaxSubflows: 100, Logger: quiet()}))
	if s := m["mptcp_cc_schedulers_loaded"]; len(s) != 1 || s[0].value != 0 {
		t.Errorf("schedulers_loaded %+v, want one sample of 0", s)
	}
	for _, name := range []string{"mptcp_cc_scheduler_info", "mptcp_cc_scheduler_decisions_total", "mptcp_cc_subflow_scheduler_decisions_total", "mptcp_cc_netns_scheduler_info"} {
		if len(m[name]) != 0 {
			t.Errorf("%s has samples without a scheduler: %+v", name, m[name])
		}
	}
}

// partial is a source that read some of what it covers (the Source error
// policy): a namespace's scheduler could not be read.
type partial struct{ snap stats.Snapshot }

func (p partial) Read() (stats.Snapshot, error) {
	return p.snap, errors.New("the scheduler of network namespace gone: does not exist")
}

// A namespace or a scheduler that could not be read sets scrape_error and
// leaves the rest exported.
func TestCollectorSchedulerError(t *testing.T) {
	m := gather(t, NewCollector(partial{withSched(synthetic(1, 2, 0))}, Options{MaxSubflows: 10, Logger: quiet()}))
	if v := m["mptcp_cc_scrape_error"][0].value; v != 1 {
		t.Errorf("scrape_error %v, want 1", v)
	}
	if n := len(m["mptcp_cc_netns_scheduler_info"]); n != 2 {
		t.Errorf("%d namespace series, want the 2 read", n)
	}
	if n := len(m["mptcp_cc_subflow_scheduler_decisions_total"]); n != 4 {
		t.Errorf("%d per-subflow decision series, want 4", n)
	}
}
