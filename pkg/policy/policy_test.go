// SPDX-License-Identifier: Apache-2.0

package policy_test

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/connctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

const xferMs = 1200 // each transfer, long enough for the join and a look at it

// A process in a cgroup with a policy opens an MPTCP connection over two
// paths without choosing a CC: both its subflows run the policy's CC. A
// process outside the cgroup, at the same time and between the same hosts,
// keeps the default. After detach, new connections from the cgroup keep the
// default too.
func TestPolicyClientCgroup(t *testing.T) {
	e := newEnv(t)
	name := testkernel.Load(t, e.ccRoot, "olia", cc.Params{})
	cg := newCgroup(t, "")
	e.attach(t, policy.Rule{Cgroup: cg, CC: name})
	if ids := programsOn(t, cg); len(ids) != 1 {
		t.Fatalf("programs on the cgroup after attach: %v, want one", ids)
	}
	def := defaultCC(t, e.net.Client)

	srv := testkernel.Serve(t, e.net)

	h := spawn(t, cg, helperConfig{Mode: "client", NS: e.net.Client, Conns: []helperConn{
		{Local: topo.ClientAddr(0).String(), Remote: srv.Addr().String(), ForMs: xferMs},
	}})
	outside := testkernel.Start(t, e.net, srv, xfer.Options{For: xferMs * time.Millisecond})
	inLocal := netip.MustParseAddrPort(h.next().Locals[0])

	got, subs := e.connCC(t, inLocal, 2, 3*time.Second)
	if got != name || len(subs) != 2 {
		t.Fatalf("connection from the cgroup: subflows %+v under %q, want 2 under %s", subs, got, name)
	}
	if subs[0].Local.Addr() == subs[1].Local.Addr() {
		t.Fatalf("both subflows leave from %s: want one per path", subs[0].Local.Addr())
	}
	// The same, seen by the kernel's socket diagnostics.
	seen := sockCCs(t, e.net.Client, func(l, _ netip.AddrPort) bool {
		return l == subs[0].Local || l == subs[1].Local
	})
	if len(seen) != 2 || seen[0] != name || seen[1] != name {
		t.Errorf("sock_diag shows the subflows of the cgroup's connection under %v, want %s twice", seen, name)
	}
	// The outside connection: in no loaded CC's map, default per sock_diag.
	if got, subs := e.connCC(t, outside.Local(), 1, 0); got != "" {
		t.Errorf("connection from outside the cgroup runs %s (%+v), want the default", got, subs)
	}
	outsideCCs := sockCCs(t, e.net.Client, func(l, _ netip.AddrPort) bool {
		return l.Port() == outside.Local().Port()
	})
	if len(outsideCCs) != 1 || outsideCCs[0] != def {
		t.Errorf("sock_diag shows the outside connection's initial subflow under %v, want [%s]", outsideCCs, def)
	}

	for _, r := range h.next().Results {
		testkernel.Receipt(t, "cgroup transfer", r, 0)
	}
	r, err := outside.Wait()
	if err != nil {
		t.Fatalf("outside transfer: %v", err)
	}
	testkernel.Receipt(t, "outside transfer", r, 0)

	list, err := policy.List(e.policyRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || !list[0].Attached || list[0].Cgroup != cg || len(list[0].Rules) != 1 {
		t.Fatalf("policy list: %+v", list)
	}
	c := list[0].Counters
	if c.Matched < 1 || c.Followed < 1 || c.Changed < 2 || c.Errors != 0 || list[0].Rules[0].Applied < 1 {
		t.Errorf("counters %+v, rule %+v: want a match, a followed join, two changes", c, list[0].Rules[0])
	}

	// After detach: the default again.
	if err := policy.Detach(cg, e.policyRoot); err != nil {
		t.Fatal(err)
	}
	if ids := programsOn(t, cg); len(ids) != 0 {
		t.Fatalf("programs left on the cgroup after detach: %v", ids)
	}
	if list, _ := policy.List(e.policyRoot); len(list) != 0 {
		t.Fatalf("policies left after detach: %+v", list)
	}
	h2 := spawn(t, cg, helperConfig{Mode: "client", NS: e.net.Client, Conns: []helperConn{
		{Local: topo.ClientAddr(0).String(), Remote: srv.Addr().String(), ForMs: 600},
	}})
	after := netip.MustParseAddrPort(h2.next().Locals[0])
	time.Sleep(300 * time.Millisecond)
	if got, subs := e.connCC(t, after, 1, 0); got != "" {
		t.Errorf("after detach, a connection from the cgroup runs %s (%+v)", got, subs)
	}
	for _, c := range sockCCs(t, e.net.Client, func(l, _ netip.AddrPort) bool { return l.Port() == after.Port() }) {
		if c != def {
			t.Errorf("after detach, sock_diag shows %s, want %s", c, def)
		}
	}
	for _, r := range h2.next().Results {
		testkernel.Receipt(t, "transfer after detach", r, 0)
	}
}

// The server side: a listener opened by a process in the cgroup hands its
// accepted subflows (the initial one and the join) the policy's CC, set at
// PASSIVE_ESTABLISHED_CB, by a rule on the clients' prefix and the service
// port; the client, outside the cgroup, keeps the default.
//
// Then the CC is unloaded while the rule still names it: new connections
// run the default, the policy counts the failure, list flags the rule.
func TestPolicyServerCgroup(t *testing.T) {
	e := newEnv(t)
	name := testenv.Unique("t_balia_")
	balia, _ := cc.Lookup("balia")
	if err := cc.Load(balia, cc.Options{Name: name, PinRoot: e.ccRoot}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Unload(name, e.ccRoot) })
	cg := newCgroup(t, "")

	h := spawn(t, cg, helperConfig{Mode: "server", NS: e.net.Server, Listen: netip.AddrPortFrom(topo.ServerAddr, 0).String()})
	addr := netip.MustParseAddrPort(h.next().Addr)
	// On the accepting side a rule matches the peer (the clients' prefix)
	// and the service port (the local one).
	e.attach(t, policy.Rule{Cgroup: cg, CC: name, Dst: netip.MustParsePrefix("10.0.0.0/16"), DstPort: addr.Port()})
	c, err := xfer.Start(xfer.Options{NS: e.net.Client, Local: topo.ClientAddr(0), Remote: addr, MPTCP: true, For: xferMs * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The server's initial subflow: local is the server address and port,
	// remote the client's initial subflow.
	var srvLocal netip.AddrPort
	for deadline := time.Now().Add(2 * time.Second); !srvLocal.IsValid() && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for k := range kernelCC(t, e.net.Server) {
			if k[1] == c.Local() {
				srvLocal = k[0]
			}
		}
	}
	if !srvLocal.IsValid() {
		t.Fatal("the server's subflow of the connection does not show in sock_diag")
	}
	got, subs := e.connCC(t, srvLocal, 2, 3*time.Second)
	if got != name || len(subs) != 2 {
		t.Fatalf("server subflows %+v under %q, want 2 under %s", subs, got, name)
	}
	for _, s := range subs {
		if s.Local.Addr() != topo.ServerAddr {
			t.Errorf("subflow %s -> %s in the map is not the server's", s.Local, s.Remote)
		}
	}
	if got, _ := e.connCC(t, c.Local(), 1, 0); got != "" {
		t.Errorf("the client, outside the cgroup, runs %s", got)
	}
	if r, err := c.Wait(); err != nil {
		t.Errorf("transfer: %v", err)
	} else {
		testkernel.Receipt(t, "transfer", r, 0)
	}

	if err := cc.Unload(name, e.ccRoot); err != nil {
		t.Fatal(err)
	}
	r, err := xfer.Run(xfer.Options{NS: e.net.Client, Local: topo.ClientAddr(0), Remote: addr, MPTCP: true, Bytes: 1 << 20})
	if err != nil {
		t.Fatalf("transfer after the policy's CC was unloaded: %v", err)
	}
	testkernel.Receipt(t, "transfer after the policy's CC was unloaded", r, 1<<20)
	list, err := policy.List(e.policyRoot)
	if err != nil || len(list) != 1 || len(list[0].Rules) != 1 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if c := list[0].Counters; c.Errors == 0 || c.LastError != -int64(unix.ENOENT) {
		t.Errorf("counters after the CC was unloaded: %+v, want errors with ENOENT", c)
	}
	if list[0].Rules[0].Registered {
		t.Errorf("rule %+v: its CC is unloaded but shows as registered", list[0].Rules[0])
	}
}

// Rules by destination and port: the most specific rule wins (longest
// prefix, then a port over none); plain TCP only where a rule says so;
// IPv6 destinations match IPv6 rules.
func TestPolicyRules(t *testing.T) {
	e := newEnv(t)
	lia := testkernel.Load(t, e.ccRoot, "lia", cc.Params{})
	balia := testkernel.Load(t, e.ccRoot, "balia", cc.Params{})
	cg := newCgroup(t, "")

	// Two listeners on every server address; one more on the client's
	// loopback for IPv6 (and its IPv4 twin).
	var ports [2]uint16
	for i := range ports {
		srv, err := xfer.Listen(e.net.Server, netip.AddrPortFrom(netip.IPv4Unspecified(), 0), true)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		ports[i] = srv.Addr().Port()
	}
	lo, err := xfer.Listen(e.net.Client, netip.AddrPortFrom(netip.IPv6Unspecified(), 0), true)
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	p1, p2 := ports[0], ports[1]
	bn1 := netip.MustParseAddr("10.1.1.1") // the server's address on bottleneck 1

	for _, r := range []policy.Rule{
		{Dst: netip.MustParsePrefix("10.1.1.0/24"), CC: lia},
		{Dst: netip.MustParsePrefix("10.1.1.0/24"), DstPort: p2, CC: balia, PlainTCP: true},
		{DstPort: p2, CC: lia},
		{Dst: netip.MustParsePrefix("::1/128"), CC: balia},
	} {
		r.Cgroup = cg
		e.attach(t, r)
	}

	to := func(a netip.Addr, p uint16) string { return netip.AddrPortFrom(a, p).String() }
	cases := []struct {
		what string
		conn helperConn
		want string // "" for the default
	}{
		{"prefix rule", helperConn{Local: "10.0.0.1", Remote: to(bn1, p1)}, lia},
		{"same prefix, with port: the port rule", helperConn{Local: "10.0.0.1", Remote: to(bn1, p2)}, balia},
		{"port only", helperConn{Local: "10.0.0.1", Remote: to(topo.ServerAddr, p2)}, lia},
		{"no rule", helperConn{Local: "10.0.0.1", Remote: to(topo.ServerAddr, p1)}, ""},
		{"plain TCP, rule with --tcp", helperConn{Local: "10.0.0.1", Remote: to(bn1, p2), TCP: true}, balia},
		{"plain TCP, rule without", helperConn{Local: "10.0.0.1", Remote: to(bn1, p1), TCP: true}, ""},
		{"IPv6 rule", helperConn{Remote: to(netip.IPv6Loopback(), lo.Addr().Port())}, balia},
		{"IPv4 twin of the IPv6 rule", helperConn{Remote: to(netip.MustParseAddr("127.0.0.1"), lo.Addr().Port())}, ""},
	}
	// Every connection must outlive the checks of all before it: the
	// helper reports the locals only once all eight have started, and
	// each expected CC may take up to a second to show. 800 ms was too
	// short on a loaded CI host (every connection had ended before it
	// was looked at).
	var conns []helperConn
	for _, c := range cases {
		c.conn.ForMs = 4000
		conns = append(conns, c.conn)
	}
	h := spawn(t, cg, helperConfig{Mode: "client", NS: e.net.Client, Conns: conns})
	locals := h.next().Locals
	time.Sleep(300 * time.Millisecond)
	def := defaultCC(t, e.net.Client)
	socks := kernelCC(t, e.net.Client)
	for i, c := range cases {
		local := netip.MustParseAddrPort(locals[i])
		wait := time.Second
		if c.want == "" {
			wait = 0
		}
		got, _ := e.connCC(t, local, 1, wait)
		if got != c.want {
			t.Errorf("%s (%s -> %s): runs %q, want %q", c.what, local, c.conn.Remote, got, c.want)
		}
		if c.want == "" {
			for k, cc := range socks {
				if k[0] == local && cc != def {
					t.Errorf("%s: sock_diag shows %s, want the default %s", c.what, cc, def)
				}
			}
		}
	}
	for i, r := range h.next().Results {
		testkernel.Receipt(t, cases[i].what+": transfer", r, 0)
	}

	list, err := policy.List(e.policyRoot)
	if err != nil || len(list) != 1 || len(list[0].Rules) != 4 {
		t.Fatalf("policy list: %+v, %v", list, err)
	}
	// Sockets each rule chose the CC of: initial subflows and plain TCP
	// sockets only; joins follow their connection, no rule involved.
	want := map[string]uint64{
		"10.1.1.0/24:0": 1, "10.1.1.0/24:" + strconv.Itoa(int(p2)): 2,
		"invalid Prefix:" + strconv.Itoa(int(p2)): 1, "::1/128:0": 1,
	}
	for _, r := range list[0].Rules {
		k := r.Dst.String() + ":" + strconv.Itoa(int(r.DstPort))
		if r.Applied != want[k] {
			t.Errorf("rule %d (%s) applied to %d sockets, want %d", r.ID, r, r.Applied, want[k])
		}
		if !r.Registered {
			t.Errorf("rule %s: its CC shows as not registered", r)
		}
	}
	if c := list[0].Counters; c.Matched != 5 || c.Errors != 0 || c.TCP != 2 {
		t.Errorf("counters %+v: want 5 matches (2 of them plain TCP), 2 plain TCP sockets, no error", c)
	}
}

// Nested cgroups: the policy of the cgroup nearest to the process wins;
// where it has no matching rule, the parent's policy applies.
func TestPolicyNestedCgroups(t *testing.T) {
	e := newEnv(t)
	lia := testkernel.Load(t, e.ccRoot, "lia", cc.Params{})
	olia := testkernel.Load(t, e.ccRoot, "olia", cc.Params{})
	parent := newCgroup(t, "")
	child := newCgroup(t, parent)
	e.attach(t, policy.Rule{Cgroup: parent, CC: lia})
	e.attach(t, policy.Rule{Cgroup: child, CC: olia, Dst: netip.PrefixFrom(topo.ServerAddr, 32)})

	srv, err := xfer.Listen(e.net.Server, netip.AddrPortFrom(netip.IPv4Unspecified(), 0), true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	port := srv.Addr().Port()
	h := spawn(t, child, helperConfig{Mode: "client", NS: e.net.Client, Conns: []helperConn{
		{Local: "10.0.0.1", Remote: netip.AddrPortFrom(topo.ServerAddr, port).String(), ForMs: xferMs},
		{Local: "10.0.0.1", Remote: "10.1.1.1:" + strconv.Itoa(int(port)), ForMs: xferMs},
	}})
	locals := h.next().Locals
	for i, want := range []string{olia, lia} {
		got, subs := e.connCC(t, netip.MustParseAddrPort(locals[i]), 2, 3*time.Second)
		if got != want || len(subs) != 2 {
			t.Errorf("connection %d: %d subflows under %q, want 2 under %s", i, len(subs), got, want)
		}
	}
	for _, r := range h.next().Results {
		testkernel.Receipt(t, "transfer", r, 0)
	}
}

// A connection under a policy that is switched live (`mptcp-cc set`) keeps
// the new CC for subflows that join afterwards: joins follow their
// connection, not the rule.
func TestPolicyJoinAfterSwitch(t *testing.T) {
	ccRoot, proot := policyRoot(t)
	n := testkernel.Net(t, topo.Config{
		Paths:       []int{0, 1, 2},
		Bottlenecks: []topo.Shaping{{RateBits: 20e6}, {RateBits: 20e6}, {RateBits: 20e6}},
		Subflows:    true,
	})
	e := &env{ccRoot: ccRoot, policyRoot: proot, net: n}
	// Path 2's endpoint comes back after the switch.
	if err := netns.Exec(n.Client, "ip", "mptcp", "endpoint", "delete", "id", "2"); err != nil {
		t.Fatal(err)
	}
	lia := testkernel.Load(t, ccRoot, "lia", cc.Params{})
	olia := testkernel.Load(t, ccRoot, "olia", cc.Params{})
	cg := newCgroup(t, "")
	e.attach(t, policy.Rule{Cgroup: cg, CC: lia})

	srv := testkernel.Serve(t, n)
	h := spawn(t, cg, helperConfig{Mode: "client", NS: n.Client, Conns: []helperConn{
		{Local: "10.0.0.1", Remote: srv.Addr().String(), ForMs: 2000},
	}})
	local := netip.MustParseAddrPort(h.next().Locals[0])
	got, subs := e.connCC(t, local, 2, 3*time.Second)
	if got != lia || len(subs) != 2 {
		t.Fatalf("before the switch: %d subflows under %q, want 2 under %s", len(subs), got, lia)
	}
	res, err := connctl.SetCC(subs[0].Token, olia, n.Client)
	if err != nil || res.Switched() != 2 {
		t.Fatalf("switch: %+v, %v", res, err)
	}
	if err := netns.Exec(n.Client, "ip", "mptcp", "endpoint", "add", topo.ClientAddr(2).String(), "dev", "p2", "subflow"); err != nil {
		t.Fatal(err)
	}
	got, subs = e.connCC(t, local, 3, 3*time.Second)
	if got != olia || len(subs) != 3 {
		t.Fatalf("after the switch and a new join: %d subflows under %q (%+v), want 3 under %s", len(subs), got, subs, olia)
	}
	for _, r := range h.next().Results {
		testkernel.Receipt(t, "transfer", r, 0)
	}
}

// Detaching the policy in the middle of a transfer from the cgroup: the
// connection keeps the CC it was given (detach changes no running socket),
// completes with every byte, and its subflows leave the CC's map when it
// closes.
func TestPolicyDetachMidTransfer(t *testing.T) {
	e := newEnv(t)
	name := testkernel.Load(t, e.ccRoot, "lia", cc.Params{})
	cg := newCgroup(t, "")
	e.attach(t, policy.Rule{Cgroup: cg, CC: name})
	srv := testkernel.Serve(t, e.net)
	h := spawn(t, cg, helperConfig{Mode: "client", NS: e.net.Client, Conns: []helperConn{
		{Local: topo.ClientAddr(0).String(), Remote: srv.Addr().String(), ForMs: 3000},
	}})
	local := netip.MustParseAddrPort(h.next().Locals[0])
	if got, subs := e.connCC(t, local, 2, 3*time.Second); got != name || len(subs) != 2 {
		t.Fatalf("before detach: subflows %+v under %q, want 2 under %s", subs, got, name)
	}
	if err := policy.Detach(cg, e.policyRoot); err != nil {
		t.Fatal(err)
	}
	if got, subs := e.connCC(t, local, 2, 0); got != name || len(subs) != 2 {
		t.Errorf("after detach, mid-transfer: subflows %+v under %q, want still 2 under %s", subs, got, name)
	}
	for _, r := range h.next().Results {
		testkernel.Receipt(t, "transfer across the detach", r, 0)
	}
	for deadline := time.Now().Add(3 * time.Second); len(testkernel.Subflows(t, e.ccRoot, name)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("entries left after the connection closed: %+v", testkernel.Subflows(t, e.ccRoot, name))
		}
	}
}

// A rule's delayed-ACK cap reaches every subflow the server accepts, the
// join included (which takes its connection's CC without a rule), and is
// counted; the connection stays intact. A cap the kernel would refuse is
// refused before anything is attached.
func TestPolicyDelackCap(t *testing.T) {
	e := newEnv(t)
	cg := newCgroup(t, "")
	h := spawn(t, cg, helperConfig{Mode: "server", NS: e.net.Server, Listen: netip.AddrPortFrom(topo.ServerAddr, 0).String()})
	addr := netip.MustParseAddrPort(h.next().Addr)

	for _, bad := range []time.Duration{time.Microsecond, 500 * time.Millisecond} {
		err := policy.Attach(policy.Rule{Cgroup: cg, CC: "reno", DelackMax: bad}, e.policyRoot)
		if !errors.Is(err, policy.ErrInvalidRule) || !strings.Contains(err.Error(), "delayed-ACK cap") {
			t.Errorf("a %v cap: %v, want an invalid rule naming the delayed-ACK cap", bad, err)
		}
	}
	if list, err := policy.List(e.policyRoot); err != nil || len(list) != 0 {
		t.Fatalf("refused caps left a policy: %+v, %v", list, err)
	}

	const capped = 20 * time.Millisecond // two ticks or more at any HZ from 100
	e.attach(t, policy.Rule{Cgroup: cg, CC: "reno", Dst: netip.MustParsePrefix("10.0.0.0/16"), DelackMax: capped})
	r, err := xfer.Run(xfer.Options{NS: e.net.Client, Local: topo.ClientAddr(0), Remote: addr, MPTCP: true, For: xferMs * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	testkernel.Receipt(t, "transfer", r, 0)
	list, err := policy.List(e.policyRoot)
	if err != nil || len(list) != 1 || len(list[0].Rules) != 1 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	c := list[0].Counters
	t.Logf("counters: %+v", c)
	if c.MPTCP != 2 || c.Delack != 2 || c.Errors != 0 {
		t.Errorf("counters %+v: want the 2 subflows seen and capped, no error", c)
	}
	if got := list[0].Rules[0].DelackMax; got != capped {
		t.Errorf("the rule lists a cap of %v, want %v", got, capped)
	}
}
