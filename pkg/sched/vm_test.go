// SPDX-License-Identifier: Apache-2.0

package sched_test

import (
	"os"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/schedmodel"
)

// guestEnv narrows TestInVM to some TestGuest* functions: a regexp of the
// names after "TestGuest" (MPTCP_CC_SCHED_GUEST=Weighted runs
// TestGuestWeighted alone), for working on one scheduler without the
// others' minutes in the emulated VM.
const guestEnv = "MPTCP_CC_SCHED_GUEST"

// TestInVM boots the test kernel (the only one here with the BPF scheduler
// hook) once and runs every TestGuest* of this package inside it, or those
// guestEnv names.
func TestInVM(t *testing.T) {
	testenv.RequireRoot(t)
	pattern := "^TestGuest"
	if p := os.Getenv(guestEnv); p != "" {
		pattern = "^TestGuest(" + p + ")$"
	}
	vmtest.RunTests(t, pattern, 9*time.Minute)
}

// load loads algo under a unique name and unloads it at cleanup.
func load(t *testing.T, root, algo string, p sched.Params) string {
	t.Helper()
	a, err := sched.Lookup(algo)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.Unique("t_" + algo[:min(len(algo), 4)] + "_")
	if err := sched.Load(a, sched.Options{Name: name, PinRoot: root, Params: p}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sched.Unload(name, root); err != nil {
			t.Errorf("unloading %s: %v", name, err)
		}
	})
	return name
}

// wire is what each bottleneck carried toward the server.
func wire(t *testing.T, n *topo.Net, paths int) []uint64 {
	t.Helper()
	out := make([]uint64, paths)
	for j := range out {
		b, _, _, err := n.BottleneckStats(j)
		if err != nil {
			t.Fatal(err)
		}
		out[j] = b
	}
	return out
}

func diff(a, b []uint64) []uint64 {
	out := make([]uint64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

func sum(v []uint64) (s uint64) {
	for _, x := range v {
		s += x
	}
	return s
}

// asymmetric is two paths of rate bits/s each: a short one (path 0) and a
// long one (path 1).
func asymmetric(t *testing.T, rate uint64, short, long time.Duration) *topo.Net {
	return network(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: rate, Delay: short / 2},
			{RateBits: rate, Delay: long / 2},
		},
		Subflows: true,
	})
}

// minrtt carries a bulk transfer intact, uses both paths once the short
// one's window is full, puts little more than the payload on the wire, and
// every decision it took replays identically through its Go model.
func TestGuestMinRTT(t *testing.T) {
	vmtest.Guest(t)
	root := testkernel.PinRoot(t)
	name := load(t, root, "minrtt", sched.Params{Trace: true})
	if !sched.IsRegistered(name) {
		t.Fatalf("%s loaded but not in net.mptcp.available_schedulers", name)
	}
	n := asymmetric(t, 8e6, 10*time.Millisecond, 40*time.Millisecond)
	r := transfer(t, n, root, name, "minrtt", schedmodel.Args{}, 4<<20, nil)
	if cur, err := sched.Current(n.Client); err != nil || cur != name {
		t.Fatalf("scheduler of the client namespace: %q, %v; want %s", cur, err, name)
	}
	checkWire(t, r)
	if r.wire[1] < r.payload/20 {
		t.Errorf("the long path carried %d bytes: minrtt should spill onto it once the short one is full", r.wire[1])
	}
	if r.sends == 0 {
		t.Error("the stats map counted no decisions")
	}
}

// TestGuestDifferential is the differential test over pkg/algo's table,
// as pkg/cc's TestBPFMatchesModel: every scheduler carries a transfer
// intact with its default args, and every decision it traced replays
// identically through its Go model (transfer replays them). A new
// scheduler is in it without a line here; its own TestGuest* checks what
// it is for.
func TestGuestDifferential(t *testing.T) {
	vmtest.Guest(t)
	root := testkernel.PinRoot(t)
	n := asymmetric(t, 8e6, 10*time.Millisecond, 40*time.Millisecond)
	for _, a := range sched.Algorithms() {
		t.Run(a.Name, func(t *testing.T) {
			name := load(t, root, a.Name, sched.Params{Trace: true})
			transfer(t, n, root, name, a.Name, schedmodel.Args{}, 1<<20, nil)
		})
	}
}

// replay runs every traced decision through the model and fails on the
// first that differs.
func replay(t *testing.T, algo string, args schedmodel.Args, events []schedmodel.Trace) {
	t.Helper()
	m, err := schedmodel.New(algo, args)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 {
		t.Fatal("no decisions traced")
	}
	for i, e := range events {
		o, s := schedmodel.Replay(m, e)
		want := e.Out
		want.Mask &= 1<<e.Conn.N - 1
		if want.Mask == 0 {
			want.Burst = o.Burst // nothing scheduled: the burst is not used
		}
		if o != want || s != e.After {
			t.Fatalf("decision %d of %d: BPF %+v state %v, model %+v state %v\ninputs: %+v", i, len(events), want, e.After.W, o, s.W, e.Conn)
		}
	}
	t.Logf("%d decisions replayed identically through the %s model", len(events), algo)
}
