// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// Every coupled CC carries a two-path MPTCP transfer: both subflows run it,
// coupled with each other, and every byte arrives.
func TestTwoPathTransferEach(t *testing.T) {
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 50e6)
	for _, a := range cc.Algorithms() {
		t.Run(a.Name, func(t *testing.T) {
			name := testkernel.Load(t, root, a.Name, cc.Params{RSFTarget: cc.DefaultRSFTarget})
			var mid []int
			var tokens = map[uint32]bool{}
			run(t, n, []flow{{path: 0, mptcp: true, cc: name}}, time.Second, 2*time.Second, func(end bool) {
				checkRecordsCarryID(t, root, name, a)
				subs := testkernel.Subflows(t, root, name)
				mid = append(mid, len(subs))
				for _, s := range subs {
					tokens[s.Token] = true
					if !s.MPTCP || s.Paths != 2 || s.Cwnd == 0 || s.SRTT == 0 || s.Paced {
						t.Errorf("subflow %+v: want an unpaced MPTCP subflow coupled with 2 paths", s)
					}
				}
			})
			if mid[0] != 2 || mid[1] != 2 {
				t.Errorf("subflows in the map during the transfer: %v, want 2", mid)
			}
			if len(tokens) != 1 {
				t.Errorf("subflows carry tokens %v, want one connection", tokens)
			}
			waitEmpty(t, root, name)
		})
	}
}

// checkRecordsCarryID checks that the records the BPF wrote carry the id
// the loader gave the object from pkg/algo's table: in the record and as
// the top byte of the subflow id (what `mptcp-cc upgrade` and the readers
// rely on).
func checkRecordsCarryID(t *testing.T, root, name string, a cc.Algorithm) {
	t.Helper()
	m, err := cc.OpenSubflows(root, name)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var (
		key uint64
		rec abi.Subflow
		n   int
	)
	it := m.Iterate()
	for it.Next(&key, &rec) {
		n++
		if rec.Algo != a.ID || uint32(rec.Id>>56) != a.ID {
			t.Errorf("%s: a subflow record has algo %d and id %#x, want the table's id %d in both", a.Name, rec.Algo, rec.Id, a.ID)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("%s: no subflow records to check the id of", a.Name)
	}
}

// Pacing asks the kernel to pace each subflow, and only then is it paced:
// the kernel's own pacing status of each subflow, as the program reads it
// back.
func TestPacingParam(t *testing.T) {
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 50e6)
	for _, pacing := range []bool{true, false} {
		name := testkernel.Load(t, root, "lia", cc.Params{Pacing: pacing})
		var seen int
		run(t, n, []flow{{path: 0, mptcp: true, cc: name}}, time.Second, time.Second, func(end bool) {
			for _, s := range testkernel.Subflows(t, root, name) {
				seen++
				if s.Paced != pacing {
					t.Errorf("loaded with Pacing %v, subflow %v reports paced %v", pacing, s.Local, s.Paced)
				}
			}
		})
		if seen == 0 {
			t.Fatalf("Pacing %v: no subflow seen", pacing)
		}
	}
}

// waitEmpty fails unless the CC's map empties (sockets release their state
// a moment after close).
func waitEmpty(t *testing.T, root, name string) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		subs := testkernel.Subflows(t, root, name)
		if len(subs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d subflow entries left after every connection closed: %+v", len(subs), subs)
		}
	}
}

// Unloading while a connection uses the CC breaks nothing, for each CC:
// the kernel keeps the programs until the socket is released.
func TestUnloadWhileInUse(t *testing.T) {
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 20e6)
	srv := testkernel.Serve(t, n)
	for _, a := range cc.Algorithms() {
		t.Run(a.Name, func(t *testing.T) {
			name := testenv.Unique("t_unl_")
			if err := cc.Load(a, cc.Options{Name: name, PinRoot: root, Params: cc.Params{RSFTarget: cc.DefaultRSFTarget}}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cc.Unload(name, root) })

			c := testkernel.Start(t, n, srv, xfer.Options{CC: name, Bytes: 8 << 20})
			time.Sleep(700 * time.Millisecond)
			if err := cc.Unload(name, root); err != nil {
				t.Fatalf("unload during the transfer: %v", err)
			}
			if cc.IsRegistered(name) {
				t.Fatal("still registered after unload")
			}
			res, err := c.Wait()
			if err != nil {
				t.Fatalf("transfer after unload: %v", err)
			}
			testkernel.Receipt(t, "transfer after unload", res, 8<<20)
		})
	}
}

// Churn: many short MPTCP connections, each with its join, leave no entry.
func TestNoEntriesAfterChurn(t *testing.T) { churn(t, 1000) }

// The same at the scale the reliability goal names: 10,000 connections
// (`make soak`; about ten times the CI test's minute).
func TestSoakChurn(t *testing.T) {
	testenv.Soak(t, "10,000 connections")
	churn(t, 10000)
}

func churn(t *testing.T, conns int) {
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 0)
	name := testkernel.Load(t, root, "lia", cc.Params{})
	srv := testkernel.Serve(t, n)
	joins0 := testkernel.MIBCounter(t, n.Server, "MPTcpExtMPJoinAckRx")
	var corrupted []int64
	for i := 0; i < conns; i++ {
		res, err := testkernel.Run(n, srv, xfer.Options{CC: name, Bytes: 256 << 10})
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if res.Delivered != res.Sent {
			t.Fatalf("connection %d: sent %d bytes, %d arrived: %+v", i, res.Sent, res.Delivered, res)
		}
		if !res.Intact {
			corrupted = append(corrupted, res.FirstBad)
		}
	}
	// Linux 6.18's MPTCP delivers wrong bytes now and then whatever the CC
	// (docs/kernel-faults.md section 1: 6 in about 187,000 on a quiet
	// host, 4 in 1,000 in a CI run beside the other tests, 77 in 10,000
	// with kernel cubic in an independent harness). A CC cannot change
	// payload, so they are counted here, and only a count the kernel's
	// worst measured rate would reach less than once in 1,000 runs fails.
	if len(corrupted) > 0 {
		t.Logf("%d connection(s) delivered wrong bytes (kernel MPTCP), first wrong byte at offsets %v", len(corrupted), corrupted)
	}
	if max := testkernel.KernelFaultMax(conns); len(corrupted) > max {
		t.Fatalf("%d of %d connections delivered wrong bytes: more than the kernel's own fault explains (%d)", len(corrupted), conns, max)
	}
	// The join path (init of a second subflow, then its release) must have
	// been exercised, not only single-subflow connections.
	joins := testkernel.MIBCounter(t, n.Server, "MPTcpExtMPJoinAckRx") - joins0
	t.Logf("%d connections, %d joined subflows", conns, joins)
	if joins < uint64(conns/2) {
		t.Fatalf("only %d of %d connections got their second subflow", joins, conns)
	}
	waitEmpty(t, root, name)
}
