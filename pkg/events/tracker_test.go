// SPDX-License-Identifier: Apache-2.0

package events

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// The addresses of the test network (lab/topo's Build): the client's two
// paths and the server.
var c0, c1, sv = topo.ClientAddr(0), topo.ClientAddr(1), topo.ServerAddr

func lifecycle(tr *Tracker, token uint32, t0 time.Time) {
	tr.Handle(mptcpnl.Event{Type: mptcpnl.EventCreated, Token: token, Saddr: c0, Sport: 1000, Daddr: sv, Dport: 80}, t0)
	tr.Handle(mptcpnl.Event{Type: mptcpnl.EventEstablished, Token: token, Saddr: c0, Sport: 1000, Daddr: sv, Dport: 80}, t0.Add(time.Millisecond))
	tr.Handle(mptcpnl.Event{Type: mptcpnl.EventSubEstablished, Token: token, LocalID: 1, RemoteID: 0, Saddr: c1, Sport: 2000, Daddr: sv, Dport: 80}, t0.Add(2*time.Millisecond))
}

func TestTrackerLifecycle(t *testing.T) {
	tr := NewTracker(2)
	t0 := time.Unix(1000, 0)
	lifecycle(tr, 0xabc, t0)
	c, ok := tr.Lookup(0xabc)
	if !ok || !c.Open() || len(c.Subflows) != 2 || c.Created != t0 || c.Local != netip.AddrPortFrom(c0, 1000) {
		t.Fatalf("after establishment: %+v", c)
	}
	sf, ok := c.Subflow(netip.AddrPortFrom(c1, 2000), netip.AddrPortFrom(sv, 80))
	if !ok || sf.LocalID != 1 || sf.Established != t0.Add(2*time.Millisecond) {
		t.Fatalf("joined subflow: %+v", sf)
	}
	tr.Handle(mptcpnl.Event{Type: mptcpnl.EventSubPriority, Token: 0xabc, LocalID: 1, Saddr: c1, Sport: 2000, Daddr: sv, Dport: 80, Backup: true}, t0.Add(3*time.Millisecond))
	tr.Handle(mptcpnl.Event{Type: mptcpnl.EventSubClosed, Token: 0xabc, LocalID: 1, Saddr: c1, Sport: 2000, Daddr: sv, Dport: 80, Error: 104}, t0.Add(4*time.Millisecond))
	c, _ = tr.Lookup(0xabc)
	if sf := c.Subflows[1]; !sf.Backup || sf.Closed.IsZero() || sf.Error != 104 {
		t.Fatalf("closed subflow: %+v", sf)
	}
	tr.Handle(mptcpnl.Event{Type: mptcpnl.EventClosed, Token: 0xabc}, t0.Add(time.Second))
	if tr.OpenCount() != 0 {
		t.Fatal("still open after CLOSED")
	}
	st := tr.Snapshot()
	if len(st.Closed) != 1 || st.Closed[0].Closed != t0.Add(time.Second) || st.Closed[0].Subflows[0].Closed.IsZero() {
		t.Fatalf("closed: %+v", st.Closed)
	}
	if st.Counts["CREATED"] != 1 || st.Counts["SUB_ESTABLISHED"] != 1 || st.Counts["CLOSED"] != 1 {
		t.Fatalf("counts: %v", st.Counts)
	}
	// Only the last keepClosed are kept, most recent first.
	for tok := uint32(1); tok <= 3; tok++ {
		lifecycle(tr, tok, t0)
		tr.Handle(mptcpnl.Event{Type: mptcpnl.EventClosed, Token: tok}, t0.Add(time.Duration(tok)*time.Hour))
	}
	st = tr.Snapshot()
	if len(st.Closed) != 2 || st.Closed[0].Token != 3 || st.Closed[1].Token != 2 {
		t.Fatalf("recently closed: %+v", st.Closed)
	}
}

// A connection older than the subscription shows up with its first event.
func TestTrackerMidConnection(t *testing.T) {
	tr := NewTracker(1)
	tr.Handle(mptcpnl.Event{Type: mptcpnl.EventSubEstablished, Token: 7, LocalID: 2, RemoteID: 1, Saddr: c1, Sport: 5, Daddr: sv, Dport: 80}, time.Unix(5, 0))
	c, ok := tr.Lookup(7)
	if !ok || !c.Created.IsZero() || len(c.Subflows) != 1 || c.Subflows[0].RemoteID != 1 {
		t.Fatalf("%+v", c)
	}
	tr.Handle(mptcpnl.Event{Type: mptcpnl.EventAnnounced, Token: 7, RemoteID: 3, Daddr: netip.MustParseAddr("10.1.1.1")}, time.Unix(6, 0))
	c, _ = tr.Lookup(7)
	if len(c.Announced) != 1 {
		t.Fatalf("announced: %+v", c.Announced)
	}
}

func sub(id uint64, token uint32, sf uint32, local netip.Addr, cwnd uint32, srtt time.Duration, acked, delivered, lost uint64, updated uint64) stats.Subflow {
	return stats.Subflow{CC: "mptcp_olia", Algo: "olia", ID: id, Token: token, SubflowID: sf, MPTCP: token != 0,
		Local: netip.AddrPortFrom(local, 1000), Remote: netip.AddrPortFrom(sv, 80), Cwnd: cwnd, SRTT: srtt,
		BytesAcked: acked, Delivered: delivered, Lost: lost, CoupledName: "alpha", Coupled: float64(sf) / 10, UpdatedNs: updated}
}

func TestSamplerRatesAndSort(t *testing.T) {
	var s Sampler
	t0 := time.Unix(100, 0)
	f := s.Frame([]stats.Subflow{
		sub(1, 0xa, 1, c0, 10, 10*time.Millisecond, 1000, 10, 0, 5),
		sub(2, 0xa, 2, c1, 20, 30*time.Millisecond, 2000, 20, 0, 9),
		sub(3, 0xb, 1, c0, 50, 5*time.Millisecond, 0, 0, 0, 1),
	}, nil, t0)
	if len(f.Connections) != 2 || f.Subflows != 3 || f.Connections[0].Rate != -1 {
		t.Fatalf("first frame: %+v", f)
	}
	tr := NewTracker(1)
	lifecycle(tr, 0xa, t0.Add(-time.Minute))
	st := tr.Snapshot()
	f = s.Frame([]stats.Subflow{
		sub(1, 0xa, 1, c0, 12, 10*time.Millisecond, 1000+500_000, 110, 10, 5),
		sub(2, 0xa, 2, c1, 22, 30*time.Millisecond, 2000+1_500_000, 120, 0, 9),
		sub(3, 0xb, 1, c0, 60, 5*time.Millisecond, 0, 0, 0, 1),
		sub(4, 0, 0, c0, 3, time.Millisecond, 0, 0, 0, 1), // plain TCP
	}, &st, t0.Add(500*time.Millisecond))
	var a ConnRow
	for _, c := range f.Connections {
		if c.Token == "0000000a" {
			a = c
		}
	}
	if a.Token != "0000000a" || a.Rate != 4_000_000 || a.Cwnd != 34 || a.MinSRTT != 0.01 || a.MaxSRTT != 0.03 || a.Coupled != 0.2 {
		t.Fatalf("connection a: %+v", a)
	}
	if r := a.Subflows[0].LossRatio; r != 10.0/110 {
		t.Fatalf("loss ratio %v", r)
	}
	if a.Created.IsZero() || a.SubflowsSeen != 2 || a.Subflows[0].Established.IsZero() {
		t.Fatalf("events not joined: %+v", a)
	}
	order := func(by string) string {
		if err := SortConns(f.Connections, by); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range f.Connections {
			out = append(out, c.Token)
		}
		return strings.Join(out, ",")
	}
	for by, want := range map[string]string{
		"token": ",0000000a,0000000b", // plain TCP (no token) first
		"cwnd":  "0000000b,0000000a,",
		"rate":  "0000000a,0000000b,", // b's rate is 0, the plain socket's unknown
		"srtt":  "0000000a,0000000b,",
	} {
		if got := order(by); got != want {
			t.Errorf("sort %s: %s, want %s", by, got, want)
		}
	}
	if err := SortConns(nil, "bogus"); err == nil {
		t.Error("unknown sort key accepted")
	}
}
