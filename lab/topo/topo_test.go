// SPDX-License-Identifier: Apache-2.0

package topo_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// Build, the preset of BuildMulti the tests and the demo use, keeps its
// address plan: the client on 10.0.i.1 per path, the server on 10.1.0.1
// and on 10.1.j.1 for every bottleneck j. An MPTCP connection opens a
// subflow per path, each path crosses the bottleneck it names, and Close
// removes every namespace.
func TestBuildPreset(t *testing.T) {
	n := testkernel.Net(t, topo.Config{
		Prefix:      "mpcc-bt",
		Paths:       []int{0, 1, 1},
		Bottlenecks: []topo.Shaping{{RateBits: 50e6}, {RateBits: 50e6}},
		Subflows:    true,
	})
	for _, ns := range []string{n.Client, n.Router, n.Server} {
		if !strings.HasPrefix(ns, "mpcc-bt-") || !netns.Exists(ns) {
			t.Errorf("namespace %q: want it to exist and start with mpcc-bt-", ns)
		}
	}
	addrs, err := netns.Output(n.Server, "ip", "-4", "-o", "addr", "show")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"10.1.0.1/24", "10.1.1.1/24"} {
		if !strings.Contains(addrs, a) {
			t.Errorf("the server has no %s:\n%s", a, addrs)
		}
	}

	// Every client path reaches every server address (plain TCP).
	for _, to := range []netip.Addr{topo.ServerAddr, netip.MustParseAddr("10.1.1.1")} {
		srv, err := xfer.Listen(n.Server, netip.AddrPortFrom(to, 0), false)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			res, err := xfer.Run(xfer.Options{NS: n.Client, Local: topo.ClientAddr(i), Remote: srv.Addr(), Bytes: 1000})
			if err != nil || !res.Intact {
				t.Errorf("path %d -> %v: %v %+v", i, to, err, res)
			}
		}
		srv.Close()
	}

	// MPTCP from path 0: three subflows, over both bottlenecks.
	var before [2]uint64
	for j := range before {
		before[j], _, _, _ = n.BottleneckStats(j)
	}
	srv := testkernel.Serve(t, n)
	res, err := testkernel.Run(n, srv, xfer.Options{Bytes: 4 << 20})
	if err != nil {
		t.Fatalf("transfer: %v", err)
	}
	testkernel.Receipt(t, "transfer", res, 4<<20)
	for j := range before {
		sent, _, _, err := n.BottleneckStats(j)
		if err != nil {
			t.Fatal(err)
		}
		if sent-before[j] < 256<<10 {
			t.Errorf("bottleneck %d carried %d bytes of 4 MiB, want a share", j, sent-before[j])
		}
	}
	srv.Close()

	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{n.Client, n.Router, n.Server} {
		if netns.Exists(ns) {
			t.Errorf("namespace %s left after Close", ns)
		}
	}
}

// Build's own limits, before anything is created.
func TestBuildValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  topo.Config
		want string
	}{
		{topo.Config{Bottlenecks: []topo.Shaping{{}}}, "1 to 8 paths"},
		{topo.Config{Paths: []int{0}}, "1 to 8 bottlenecks"},
		{topo.Config{Paths: []int{0, 1}, Bottlenecks: []topo.Shaping{{}}}, "bottleneck 1, which does not exist"},
	} {
		if _, err := topo.Build(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.cfg, err, c.want)
		}
	}
}
