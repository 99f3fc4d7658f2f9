// SPDX-License-Identifier: Apache-2.0

package ackwatch_test

import (
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/lab/ackwatch"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
)

// TestInVM runs the watch's tests in the shared test kernel's VM: the
// host's kernel (in lockdown) refuses fentry programs.
func TestInVM(t *testing.T) {
	testenv.RequireRoot(t)
	vmtest.RunTests(t, "^TestGuest", 8*time.Minute)
}

// TestGuestWatchTellsKindsApart: a plain TCP transfer, then a two-subflow
// MPTCP one, into a watched server namespace. Each must be counted under
// its own kind (the TCP transfer's ACKs under TCP only, the MPTCP one's
// under subflows), every ACK the timer or the reader sent must be among
// the ACKs counted, and a namespace without traffic must see nothing.
func TestGuestWatchTellsKindsApart(t *testing.T) {
	vmtest.Guest(t)
	path := topo.Shaping{RateBits: 10e6, Delay: 10 * time.Millisecond, QueueBytes: 40 * 1500}
	n := testkernel.Net(t, topo.Config{Paths: []int{0, 1}, Bottlenecks: []topo.Shaping{path, path}, Subflows: true})
	quiet := testenv.Namespace(t, "awq")
	srv := testkernel.Serve(t, n)

	w, err := ackwatch.Start(n.Server)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	wq, err := ackwatch.Start(quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer wq.Stop()

	tcp := xfer.Options{NS: n.Client, Local: topo.ClientAddr(0), Remote: srv.Addr(), CC: "reno", For: 3 * time.Second}
	res, err := xfer.Run(tcp)
	if err != nil || !res.Intact {
		t.Fatalf("TCP transfer: %+v, %v", res, err)
	}
	afterTCP, err := w.Totals()
	if err != nil {
		t.Fatal(err)
	}
	if res, err = testkernel.Run(n, srv, xfer.Options{CC: "reno", For: 3 * time.Second}); err != nil || !res.Intact {
		t.Fatalf("MPTCP transfer: %+v, %v", res, err)
	}
	end, err := w.Stop()
	if err != nil {
		t.Fatal(err)
	}
	mp := ackwatch.Sub(end, afterTCP)
	t.Logf("TCP transfer, TCP: %s", afterTCP.TCP.Describe())
	t.Logf("MPTCP transfer, subflows: %s", mp.Subflow.Describe())
	t.Logf("misses: %d", end.Misses)

	// A 3 s bulk transfer at 10 Mbit/s is over 1,000 segments: hundreds of
	// ACKs, and the every-other rule leaves some to wait.
	for what, c := range map[string]ackwatch.Counts{"the TCP transfer": afterTCP.TCP, "the MPTCP transfer": mp.Subflow} {
		if c.ACKs < 100 {
			t.Errorf("%s: %d ACKs counted, want hundreds", what, c.ACKs)
		}
		var waited, timer uint64
		for i := 0; i < ackwatch.Whys; i++ {
			waited += c.Delayed[i]
			timer += c.ByTimer[i]
		}
		if waited == 0 || c.Delayed[ackwatch.OneSegment] == 0 {
			t.Errorf("%s: no ACK left to wait (%v), yet every other segment is", what, c.Delayed)
		}
		if timer+c.ByReader > c.ACKs {
			t.Errorf("%s: %d ACKs by the timer and %d by the reader, more than the %d counted", what, timer, c.ByReader, c.ACKs)
		}
		if c.ReaderPending > c.ReaderRuns {
			t.Errorf("%s: the reader found the timer armed %d times in %d runs", what, c.ReaderPending, c.ReaderRuns)
		}
	}
	if afterTCP.Subflow.ACKs != 0 {
		t.Errorf("the plain TCP transfer was counted as MPTCP subflows: %+v", afterTCP.Subflow)
	}
	if mp.TCP.ACKs != 0 {
		t.Errorf("the MPTCP transfer was counted as plain TCP: %+v", mp.TCP)
	}
	q, err := wq.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if q.TCP.ACKs != 0 || q.Subflow.ACKs != 0 {
		t.Errorf("the watch on a namespace without traffic counted %+v", q)
	}
}

// TestStartErrors: a watch needs a namespace that exists, and says so.
func TestStartErrors(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := ackwatch.Start(""); err == nil {
		t.Error("a watch without a namespace started")
	}
	if _, err := ackwatch.Start(testenv.Unique("no-such-ns-")); err == nil {
		t.Error("a watch on a namespace that does not exist started")
	}
}
