// SPDX-License-Identifier: Apache-2.0

package topo_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// A multi-host network: two kinds of hosts, one of them with two instances,
// a shared emulated link, a tbf-shaped server link. Every host path reaches
// its server over the link it names (checked with the link counters), MPTCP
// connections open one subflow per path, and Close leaves nothing.
func TestMultiBuildRouteClose(t *testing.T) {
	testenv.RequireRoot(t)
	const prefix = "mpcc-mt"
	m, err := topo.BuildMulti(topo.MultiConfig{
		Prefix: prefix,
		Hosts: []topo.HostConfig{
			{Name: "mp", Count: 2, Paths: []int{0, 1}},
			{Name: "sp", Paths: []int{1}},
		},
		Links: []topo.LinkConfig{
			{Name: "private", Shaping: topo.Shaping{RateBits: 50e6}},
			{Name: "shared", Shaping: topo.Shaping{RateBits: 50e6, Delay: 5 * time.Millisecond}},
		},
		Servers: []topo.ServerConfig{{Name: "s1", Link: topo.Shaping{RateBits: 100e6}}, {Name: "s2"}},
		Sysctls: []string{"net.ipv4.tcp_no_metrics_save=1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			m.Close()
		}
	}()
	if len(m.Hosts) != 2 || len(m.Hosts[0]) != 2 || len(m.Hosts[1]) != 1 || len(m.Servers) != 2 {
		t.Fatalf("namespaces: hosts %v servers %v", m.Hosts, m.Servers)
	}
	for _, ns := range m.Namespaces() {
		if !strings.HasPrefix(ns, m.ID) || !strings.HasPrefix(ns, prefix+"-") || !netns.Exists(ns) {
			t.Errorf("namespace %q: want it to exist and start with %q", ns, m.ID)
		}
	}

	// Every path of every instance reaches both servers (a small TCP
	// transfer from each source address; ping may not be installed).
	var srvs []*xfer.Server
	for s := range m.Servers {
		srv, err := xfer.Listen(m.Servers[s], netip.AddrPortFrom(m.ServerAddr(s), 0), false)
		if err != nil {
			t.Fatal(err)
		}
		srvs = append(srvs, srv)
	}
	for h, insts := range m.Hosts {
		for inst, ns := range insts {
			paths := 2
			if h == 1 {
				paths = 1
			}
			for i := range paths {
				for s, srv := range srvs {
					res, err := xfer.Run(xfer.Options{NS: ns, Local: m.HostAddr(h, inst, i), Remote: srv.Addr(), Bytes: 1000})
					if err != nil || !res.Intact {
						t.Errorf("host %d/%d path %d -> server %d: %v %+v", h, inst, i, s, err, res)
					}
				}
			}
		}
	}
	for _, srv := range srvs {
		srv.Close()
	}

	// An MPTCP transfer from an "mp" instance to server 0 uses both links.
	before0, _ := m.AccessLinkStats(0)
	before1, _ := m.AccessLinkStats(1)
	srv, err := xfer.Listen(m.Servers[0], netip.AddrPortFrom(m.ServerAddr(0), 0), true)
	if err != nil {
		t.Fatal(err)
	}
	res, err := xfer.Run(xfer.Options{NS: m.Hosts[0][1], Local: m.HostAddr(0, 1, 0), Remote: srv.Addr(), MPTCP: true, Bytes: 4 << 20})
	srv.Close()
	if err != nil {
		t.Fatalf("transfer: %v", err)
	}
	testkernel.Receipt(t, "transfer", res, 4<<20)
	after0, _ := m.AccessLinkStats(0)
	after1, err := m.AccessLinkStats(1)
	if err != nil {
		t.Fatal(err)
	}
	d0, d1 := after0.SentBytes-before0.SentBytes, after1.SentBytes-before1.SentBytes
	t.Logf("4 MiB over MPTCP: %d bytes on the private link, %d on the shared one", d0, d1)
	if d0 < 256<<10 || d1 < 256<<10 {
		t.Errorf("want both links used: %d and %d bytes", d0, d1)
	}
	sl, err := m.ServerLinkStats(0)
	if err != nil || sl.SentBytes < 4<<20 {
		t.Errorf("server link 0 carried %d bytes (%v), want the whole transfer", sl.SentBytes, err)
	}

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	left, err := topo.ListPrefix(m.ID)
	if err != nil || len(left) > 0 {
		t.Fatalf("after Close: %v %v", left, err)
	}
}

// A chained path crosses both its links: a transfer over it shows on the
// counters of each (the first an emulated link, whose reverse direction
// carries the data back to the access router, the second a tbf one). Two
// instances: the rules of the second once came after the first's chained
// rule and sent its packets round link x forever.
func TestMultiChainedPath(t *testing.T) {
	testenv.RequireRoot(t)
	prefix := testenv.Unique("mpcc-mc")
	t.Cleanup(func() { topo.CleanPrefix(prefix) })
	m, err := topo.BuildMulti(topo.MultiConfig{
		Prefix: prefix,
		Hosts:  []topo.HostConfig{{Name: "h", Count: 2, Paths: []int{1, 0}, Then: []int{-1, 1}}},
		Links: []topo.LinkConfig{
			{Name: "x", Shaping: topo.Shaping{RateBits: 50e6, Delay: 2 * time.Millisecond}},
			{Name: "t", Shaping: topo.Shaping{RateBits: 50e6}},
		},
		Servers: []topo.ServerConfig{{Name: "s"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv, err := xfer.Listen(m.Servers[0], netip.AddrPortFrom(m.ServerAddr(0), 0), false)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const n = 1 << 20
	for inst, ns := range m.Hosts[0] {
		before := [2]topo.LinkCounters{}
		for j := range before {
			before[j], _ = m.AccessLinkStats(j)
		}
		res, err := xfer.Run(xfer.Options{NS: ns, Local: m.HostAddr(0, inst, 1), Remote: srv.Addr(), Bytes: n})
		if err != nil {
			t.Errorf("instance %d: transfer over the chained path: %v", inst, err)
			continue
		}
		testkernel.Receipt(t, "transfer", res, n)
		for j, name := range []string{"x", "t"} {
			after, err := m.AccessLinkStats(j)
			if err != nil {
				t.Fatal(err)
			}
			if d := after.SentBytes - before[j].SentBytes; d < n {
				t.Errorf("instance %d: link %s carried %d bytes of the %d sent over x+t", inst, name, d, n)
			}
		}
	}
}

func TestMultiValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  topo.MultiConfig
		want string
	}{
		{topo.MultiConfig{Links: []topo.LinkConfig{{}}, Servers: []topo.ServerConfig{{}}}, "at least one host"},
		{topo.MultiConfig{Hosts: []topo.HostConfig{{Name: "a", Paths: []int{1}}}, Links: []topo.LinkConfig{{}}, Servers: []topo.ServerConfig{{}}}, "link 1, which does not exist"},
		{topo.MultiConfig{Hosts: []topo.HostConfig{{Name: "a", Paths: []int{0}, Count: 300}}, Links: []topo.LinkConfig{{}}, Servers: []topo.ServerConfig{{}}}, "at most 240"},
		{topo.MultiConfig{Hosts: []topo.HostConfig{{Name: "a", Paths: []int{0}, Endpoints: "signal"}}, Links: []topo.LinkConfig{{}}, Servers: []topo.ServerConfig{{}}}, "endpoints"},
		{topo.MultiConfig{Hosts: []topo.HostConfig{{Name: "a", Paths: []int{0}, Then: []int{0}}}, Links: []topo.LinkConfig{{}}, Servers: []topo.ServerConfig{{}}}, "then-link 0"},
		{topo.MultiConfig{Hosts: []topo.HostConfig{{Name: "a", Paths: []int{0}, Then: []int{2}}}, Links: []topo.LinkConfig{{}, {}}, Servers: []topo.ServerConfig{{}}}, "then-link 2"},
	} {
		_, err := topo.BuildMulti(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.cfg, err, c.want)
		}
	}
}

// A build that fails after its namespaces exist (here: an MPTCP subflow
// limit the kernel refuses, which only `ip mptcp limits` checks) returns
// the error and removes what it made. It once closed a nil network
// instead: a panic, and every namespace left behind.
func TestMultiFailedBuildLeavesNothing(t *testing.T) {
	testenv.RequireRoot(t)
	prefix := testenv.Unique("mpcc-mf")
	t.Cleanup(func() { topo.CleanPrefix(prefix) })
	_, err := topo.BuildMulti(topo.MultiConfig{
		Prefix:  prefix,
		Hosts:   []topo.HostConfig{{Name: "mp", Paths: []int{0, 1}, MaxSubflows: 100}},
		Links:   []topo.LinkConfig{{Name: "a"}, {Name: "b"}},
		Servers: []topo.ServerConfig{{Name: "s"}},
	})
	if err == nil {
		t.Fatal("BuildMulti accepted a subflow limit of 100")
	}
	t.Logf("refused: %v", err)
	left, lerr := topo.ListPrefix(prefix)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(left) > 0 {
		t.Errorf("the failed build (%v) left namespaces %v", err, left)
	}
}
