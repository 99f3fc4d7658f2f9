package cc_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
	"github.com/mptcp-cc/mptcp-cc/pkg/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/xfer"
)

// flow is one sender in a measured run.
type flow struct {
	path  int    // client path whose address is the source
	mptcp bool   // MPTCP (subflows on every path with an endpoint) or TCP
	cc    string // congestion control of the socket
}

// run starts every flow at once, measures what each delivered to the server
// between warmup and warmup+window, lets them finish and checks that every
// byte arrived intact. It returns Mbit/s per flow. sample, if not nil, is
// called at the start and the end of the window (e.g. to read maps).
func run(t *testing.T, n *topo.Net, flows []flow, warmup, window time.Duration, sample func(end bool)) []float64 {
	t.Helper()
	srv, err := xfer.Listen(n.Server, netip.AddrPortFrom(topo.ServerAddr, 0), true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	clients := make([]*xfer.Client, len(flows))
	for i, f := range flows {
		c, err := xfer.Start(xfer.Options{
			NS: n.Client, Local: topo.ClientAddr(f.path), Remote: srv.Addr(),
			MPTCP: f.mptcp, CC: f.cc, For: warmup + window + 500*time.Millisecond,
		})
		if err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
		clients[i] = c
	}
	recv := make([]*xfer.Received, len(flows))
	for i, c := range clients {
		r, err := srv.Conn(c.Local())
		if err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
		recv[i] = r
	}

	time.Sleep(warmup)
	start := make([]int64, len(flows))
	for i, r := range recv {
		start[i] = r.Bytes()
	}
	if sample != nil {
		sample(false)
	}
	time.Sleep(window)
	if sample != nil {
		sample(true)
	}
	mbps := make([]float64, len(flows))
	for i, r := range recv {
		mbps[i] = float64(r.Bytes()-start[i]) * 8 / window.Seconds() / 1e6
	}
	for i, c := range clients {
		res, err := c.Wait()
		if err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
		if !res.Intact {
			t.Fatalf("flow %d: data not intact (sent %d, delivered %d, first wrong byte at %d)", i, res.Sent, res.Delivered, res.FirstBad)
		}
		if flows[i].cc != "" && res.CC != flows[i].cc {
			t.Fatalf("flow %d ran %q, want %q", i, res.CC, flows[i].cc)
		}
	}
	return mbps
}

// subflowsOf returns the live subflows of one congestion control.
func subflowsOf(t *testing.T, root, name string) []stats.Subflow {
	t.Helper()
	all, err := stats.ReadAll(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []stats.Subflow
	for _, s := range all {
		if s.CC == name {
			out = append(out, s)
		}
	}
	return out
}

// bytesByPath sums bytes_acked of the subflows per client path index.
func bytesByPath(subs []stats.Subflow) map[int]uint64 {
	m := map[int]uint64{}
	for _, s := range subs {
		a := s.Local.Addr().As4()
		m[int(a[2])] += s.BytesAcked
	}
	return m
}
