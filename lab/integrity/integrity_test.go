// SPDX-License-Identifier: Apache-2.0

package integrity_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/integrity"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// A short run of six arms (a kernel CC, ours, DSS checksums on, no join
// with offloads on, a client that closes at once, and bulk transfers on
// another network meanwhile)
// accounts for every connection, opens its joins, and removes its network.
// Wrong bytes are counted, not failed: the fault is the kernel's, at a rate
// of a few per 1,000 at most (docs/kernel-faults.md).
func TestRunAccountsForEveryConnection(t *testing.T) {
	testenv.RequireRoot(t)
	root := testkernel.PinRoot(t)
	lia := testkernel.Load(t, root, "lia", cc.Params{})
	prefix := testenv.Unique("mpcc-")
	const conns = 150
	rep, err := integrity.Run(context.Background(), integrity.Options{
		Prefix: prefix,
		Arms: []integrity.Arm{{Name: "cubic", CC: "cubic"}, {Name: "lia", CC: lia},
			{Name: "cubic+csum", CC: "cubic", Checksum: true}, {Name: "reno+nojoin+offload", CC: "reno", NoJoin: true, Offload: true},
			{Name: "cubic+close", CC: "cubic", CloseEarly: true}, {Name: "cubic+busy", CC: "cubic", Busy: true},
			{Name: "cubic+wire", CC: "cubic", Wire: true}},
		Conns: conns,
		Size:  256 << 10,
	})
	t.Cleanup(func() { topo.CleanPrefix(prefix) })
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := topo.ListPrefix(prefix); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
	for _, a := range rep.Arms {
		rate, lo, hi := a.Rate()
		t.Logf("%s: %d connections, %d wrong (%.1f per 10,000, %.1f-%.1f), %d failed, %d joins, %d flagged (%d wrong), in %v; %v",
			a.Name, a.Conns, a.Wrong, rate, lo, hi, a.Failed, a.Joins, a.Flagged, a.WrongFlagged, a.Took, a.Errors)
		for _, f := range a.Findings {
			t.Logf("  connection %d: offset %d, %d wrong, run %d, %s, counters %v", f.Conn, f.Offset, f.Wrong, f.Run, f.Origin(), f.Counters)
		}
		if !a.Attributed || a.WrongFlagged > a.Wrong || a.WrongFlagged > a.Flagged || a.Flagged > conns {
			t.Errorf("%s: %d flagged, %d of them wrong, %d wrong in all", a.Name, a.Flagged, a.WrongFlagged, a.Wrong)
		}
		if a.MIB["MPCapableACKRX"] != conns {
			t.Errorf("%s: the server completed %d MP_CAPABLE handshakes, want %d", a.Name, a.MIB["MPCapableACKRX"], conns)
		}
		if a.Conns+a.Failed != conns || a.Failed > 0 {
			t.Errorf("%s: %d checked + %d failed of %d", a.Name, a.Conns, a.Failed, conns)
		}
		if a.NoJoin && a.Joins != 0 {
			t.Errorf("%s: %d joins, want none", a.Name, a.Joins)
		}
		if !a.NoJoin && a.Joins < conns/2 {
			t.Errorf("%s: only %d of %d connections joined a second subflow", a.Name, a.Joins, conns)
		}
		if max := testkernel.KernelFaultMax(conns); a.Wrong > max {
			t.Errorf("%s: %d of %d connections with wrong bytes: more than the kernel's worst measured rate explains (%d)", a.Name, a.Wrong, conns, max)
		}
		// The capture checks connection 0 on the wire (one in 1,000, and
		// every bad one): segment by segment, against its mappings, a good
		// connection must come out right, or the instrument is wrong.
		if a.Wire {
			want := 1
			if slices.ContainsFunc(a.Findings, func(f integrity.Finding) bool { return f.Conn == 0 }) {
				want = 0
			}
			if a.WireChecked != want || a.WireRight != want || a.CaptureDrops != 0 {
				t.Errorf("%s: %d good connections checked on the wire, %d right, %d packets dropped: want %d, %d, 0", a.Name, a.WireChecked, a.WireRight, a.CaptureDrops, want, want)
				if a.WireOdd != nil {
					o := a.WireOdd
					t.Logf("%s: %d segments, %d short, %s; %v", a.Name, o.Segments, o.Short, o.Verdict(), o.Examples)
				}
			}
			for _, f := range a.Findings {
				if f.Wire == nil || f.Wire.Segments == 0 {
					t.Errorf("%s: connection %d delivered wrong bytes and was not checked on the wire: %+v", a.Name, f.Conn, f.Wire)
				}
			}
		}
	}
}

// An arm whose CC is not registered is refused before anything is built.
func TestRunRefusesAMissingCC(t *testing.T) {
	testenv.RequireRoot(t)
	prefix := testenv.Unique("mpcc-")
	_, err := integrity.Run(context.Background(), integrity.Options{
		Prefix: prefix, Arms: []integrity.Arm{{Name: "nope", CC: "nope_cc"}}, Conns: 1, Size: 1 << 10,
	})
	if err == nil || !strings.Contains(err.Error(), `"nope_cc" is not registered`) {
		t.Fatalf("err = %v", err)
	}
	if left, _ := topo.ListPrefix(prefix); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
}

// Several connections at once: each still reaches its own verdict, and the
// MIB counters are said not to be tied to connections.
func TestRunInParallel(t *testing.T) {
	testenv.RequireRoot(t)
	prefix := testenv.Unique("mpcc-")
	t.Cleanup(func() { topo.CleanPrefix(prefix) })
	const conns = 200
	rep, err := integrity.Run(context.Background(), integrity.Options{
		Prefix: prefix, Arms: []integrity.Arm{{Name: "cubic", CC: "cubic"}}, Conns: conns, Size: 256 << 10, Parallel: 8,
	})
	if err != nil {
		t.Fatal(err)
	}
	a := rep.Arms[0]
	t.Logf("%d connections, %d wrong, %d failed, %d joins in %v", a.Conns, a.Wrong, a.Failed, a.Joins, a.Took)
	if a.Conns != conns || a.Failed != 0 || a.Attributed || a.Flagged != 0 || rep.Parallel != 8 {
		t.Errorf("%+v", a)
	}
	if a.MIB["MPCapableACKRX"] != conns {
		t.Errorf("the server completed %d MP_CAPABLE handshakes, want %d", a.MIB["MPCapableACKRX"], conns)
	}
}
