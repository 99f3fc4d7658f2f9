// SPDX-License-Identifier: Apache-2.0

package mptcpnl

// Tests against the running kernel. They need root, create their own network
// namespaces (named mpnl-<role>-<random>) and never touch anything outside them.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"unsafe"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// eventTimeout bounds every wait for a kernel event. Everything happens on
// veth pairs inside one host, so events arrive in milliseconds; the margin is
// for a loaded CI machine.
const eventTimeout = 5 * time.Second

// ipNS runs `ip -n ns args...` and returns its standard output.
func ipNS(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := netns.Output(ns, append([]string{"ip"}, args...)...)
	if err != nil {
		t.Fatalf("ip %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func dialNS(t *testing.T, ns string) *Conn {
	t.Helper()
	c, err := DialNS(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ifIndex(t *testing.T, ns, name string) int {
	t.Helper()
	var idx int
	err := netns.Do(ns, func() error {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return err
		}
		idx = ifi.Index
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// kernelAtLeast reports whether the running kernel is at least major.minor;
// some checks only hold for features added in recent kernels.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^(\d+)\.(\d+)`).FindStringSubmatch(unix.ByteSliceToString(u.Release[:]))
	if m == nil {
		t.Fatalf("cannot parse kernel release %q", u.Release)
	}
	maj, _ := strconv.Atoi(m[1])
	min, _ := strconv.Atoi(m[2])
	return maj > major || (maj == major && min >= minor)
}

func TestKernelFamily(t *testing.T) {
	testenv.RequireRoot(t)
	ns := testenv.Namespace(t, "mpnl-fam")
	c := dialNS(t, ns)

	// genl prints e.g. "ID: 0x1c  Version: 0x1"; the ID is global, so the
	// two lookups must agree.
	out, err := netns.Output(ns, "genl", "ctrl", "get", "name", familyName)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`ID: (0x[0-9a-f]+)\s+Version: (0x[0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("cannot parse genl output:\n%s", out)
	}
	id, _ := strconv.ParseUint(m[1], 0, 16)
	if uint16(id) != c.FamilyID() {
		t.Errorf("family ID %#x, genl says %#x", c.FamilyID(), id)
	}
	if !strings.Contains(out, eventGroup) {
		t.Errorf("genl does not list group %s:\n%s", eventGroup, out)
	}
}

// ipLimits parses `ip mptcp limits` ("add_addr_accepted 0 subflows 2"); the
// iproute2 6.1 on Debian 12 prints no JSON for limits.
func ipLimits(t *testing.T, ns string) Limits {
	t.Helper()
	out := ipNS(t, ns, "mptcp", "limits", "show")
	f := strings.Fields(out)
	var l Limits
	var seen int
	for i := 0; i+1 < len(f); i += 2 {
		v, err := strconv.ParseUint(f[i+1], 10, 32)
		if err != nil {
			t.Fatalf("parse %q: %v", out, err)
		}
		switch f[i] {
		case "subflows":
			l.Subflows = uint32(v)
			seen++
		case "add_addr_accepted":
			l.AddAddrAccepted = uint32(v)
			seen++
		}
	}
	if seen != 2 {
		t.Fatalf("cannot parse limits %q", out)
	}
	return l
}

func TestKernelLimits(t *testing.T) {
	testenv.RequireRoot(t)
	t.Parallel()
	ns := testenv.Namespace(t, "mpnl-lim")
	c := dialNS(t, ns)

	// Fresh namespace: whatever the kernel default is, both views agree.
	got, err := c.Limits()
	if err != nil {
		t.Fatal(err)
	}
	if want := ipLimits(t, ns); got != want {
		t.Errorf("default limits: got %+v, ip says %+v", got, want)
	}

	set := Limits{Subflows: 3, AddAddrAccepted: 5}
	if err := c.SetLimits(set); err != nil {
		t.Fatal(err)
	}
	if got := ipLimits(t, ns); got != set {
		t.Errorf("after SetLimits(%+v) ip says %+v", set, got)
	}
	if got, err := c.Limits(); err != nil || got != set {
		t.Errorf("Limits() = %+v, %v; want %+v", got, err, set)
	}

	ipNS(t, ns, "mptcp", "limits", "set", "subflows", "1", "add_addr_accepted", "7")
	if got, err := c.Limits(); err != nil || got != (Limits{Subflows: 1, AddAddrAccepted: 7}) {
		t.Errorf("after ip set: Limits() = %+v, %v", got, err)
	}

	// The kernel caps limits (MPTCP_PM_ADDR_MAX = 8) and must reject, not
	// clamp, a larger value; nothing may change.
	err = c.SetLimits(Limits{Subflows: 200, AddAddrAccepted: 0})
	if !errors.Is(err, unix.EINVAL) {
		t.Errorf("SetLimits above maximum: err = %v, want EINVAL", err)
	}
	if got := ipLimits(t, ns); got != (Limits{Subflows: 1, AddAddrAccepted: 7}) {
		t.Errorf("rejected SetLimits changed limits to %+v", got)
	}
}

// ipEndpoint is one element of `ip -j mptcp endpoint show`.
type ipEndpoint struct {
	Address  string `json:"address"`
	ID       int    `json:"id"`
	Port     int    `json:"port"`
	Dev      string `json:"dev"`
	Signal   bool   `json:"signal"`
	Subflow  bool   `json:"subflow"`
	Backup   bool   `json:"backup"`
	Fullmesh bool   `json:"fullmesh"`
	Implicit bool   `json:"implicit"`
}

// ipEndpoints returns what iproute2 sees, converted to Endpoint. iproute2 6.1
// does not know the laminar flag, so only the flags it prints are compared.
func ipEndpoints(t *testing.T, ns string) []Endpoint {
	t.Helper()
	out := strings.TrimSpace(ipNS(t, ns, "-j", "mptcp", "endpoint", "show"))
	var raw []ipEndpoint
	if out != "" {
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatalf("parse %q: %v", out, err)
		}
	}
	eps := make([]Endpoint, 0, len(raw))
	for _, r := range raw {
		e := Endpoint{ID: uint8(r.ID), Addr: netip.MustParseAddr(r.Address), Port: uint16(r.Port)}
		for _, f := range []struct {
			set  bool
			flag EndpointFlags
		}{{r.Signal, FlagSignal}, {r.Subflow, FlagSubflow}, {r.Backup, FlagBackup}, {r.Fullmesh, FlagFullmesh}, {r.Implicit, FlagImplicit}} {
			if f.set {
				e.Flags |= f.flag
			}
		}
		if r.Dev != "" {
			e.IfIndex = ifIndex(t, ns, r.Dev)
		}
		eps = append(eps, e)
	}
	return eps
}

func sortByID(eps []Endpoint) []Endpoint {
	eps = slices.Clone(eps)
	slices.SortFunc(eps, func(a, b Endpoint) int { return int(a.ID) - int(b.ID) })
	return eps
}

// checkEndpoints compares our dump, iproute2's dump and the expectation.
func checkEndpoints(t *testing.T, c *Conn, ns string, want []Endpoint) {
	t.Helper()
	got, err := c.Endpoints()
	if err != nil {
		t.Fatal(err)
	}
	got, want = sortByID(got), sortByID(want)
	if !slices.Equal(got, want) {
		t.Errorf("Endpoints():\n got %v\nwant %v", got, want)
	}
	// iproute2 cannot show flags it does not know (laminar), mask them.
	masked := make([]Endpoint, len(got))
	for i, e := range got {
		e.Flags &^= FlagLaminar
		masked[i] = e
	}
	if ip := sortByID(ipEndpoints(t, ns)); !slices.Equal(masked, ip) {
		t.Errorf("ip mptcp endpoint show disagrees:\n  us %v\n  ip %v", masked, ip)
	}
}

func TestKernelEndpoints(t *testing.T) {
	testenv.RequireRoot(t)
	t.Parallel()
	ns := testenv.Namespace(t, "mpnl-ep")
	// A signal endpoint with a port opens a listening socket, so its address
	// must exist; nodad makes the IPv6 address usable at once.
	ipNS(t, ns, "link", "add", "v1", "type", "veth", "peer", "name", "v2")
	ipNS(t, ns, "link", "set", "v1", "up")
	ipNS(t, ns, "link", "set", "v2", "up")
	ipNS(t, ns, "addr", "add", "10.0.9.1/24", "dev", "v1")
	ipNS(t, ns, "addr", "add", "2001:db8::1/64", "dev", "v1", "nodad")
	v1 := ifIndex(t, ns, "v1")
	c := dialNS(t, ns)

	checkEndpoints(t, c, ns, nil)

	eps := []Endpoint{
		{Addr: netip.MustParseAddr("10.0.9.1"), Flags: FlagSignal}, // kernel picks ID 1
		{ID: 42, Addr: netip.MustParseAddr("10.0.9.2"), Flags: FlagSubflow | FlagBackup, IfIndex: v1},
		{ID: 43, Addr: netip.MustParseAddr("2001:db8::1"), Port: 1234, Flags: FlagSignal},
		{ID: 44, Addr: netip.MustParseAddr("10.0.9.3"), Flags: FlagSubflow | FlagFullmesh},
	}
	if kernelAtLeast(t, 6, 18) {
		eps = append(eps, Endpoint{ID: 45, Addr: netip.MustParseAddr("10.0.9.4"), Flags: FlagLaminar})
	}
	for _, e := range eps {
		if err := c.AddEndpoint(e); err != nil {
			t.Fatal(err)
		}
	}
	eps[0].ID = 1
	checkEndpoints(t, c, ns, eps)

	if got, err := c.Endpoint(42); err != nil || got != eps[1] {
		t.Errorf("Endpoint(42) = %v, %v; want %v", got, err, eps[1])
	}
	if _, err := c.Endpoint(99); !errors.Is(err, unix.EINVAL) {
		t.Errorf("Endpoint(99) of a missing endpoint: err = %v, want EINVAL", err)
	}
	if err := c.AddEndpoint(eps[1]); err == nil {
		t.Error("adding a duplicate endpoint succeeded")
	}
	if err := c.AddEndpoint(Endpoint{ID: 46}); err == nil {
		t.Error("adding an endpoint without address succeeded")
	}

	// The in-kernel PM lets backup be changed at run time.
	if err := c.SetEndpointFlags(42, FlagSubflow); err != nil {
		t.Fatal(err)
	}
	eps[1].Flags = FlagSubflow
	checkEndpoints(t, c, ns, eps)

	// Endpoints added by someone else show up too.
	ipNS(t, ns, "mptcp", "endpoint", "add", "10.0.9.5", "id", "50", "signal")
	eps = append(eps, Endpoint{ID: 50, Addr: netip.MustParseAddr("10.0.9.5"), Flags: FlagSignal})
	checkEndpoints(t, c, ns, eps)

	if err := c.DelEndpoint(42); err != nil {
		t.Fatal(err)
	}
	eps = slices.Delete(eps, 1, 2)
	checkEndpoints(t, c, ns, eps)
	if err := c.DelEndpoint(42); !errors.Is(err, unix.EINVAL) {
		t.Errorf("deleting a missing endpoint: err = %v, want EINVAL", err)
	}
	if err := c.DelEndpoint(0); err == nil {
		t.Error("DelEndpoint(0) succeeded")
	}

	if err := c.FlushEndpoints(); err != nil {
		t.Fatal(err)
	}
	checkEndpoints(t, c, ns, nil)
}

// eventLog collects the events of a Subscription in arrival order so a test
// can wait for an event without consuming the others.
type eventLog struct {
	mu      sync.Mutex
	events  []Event
	err     error
	changed chan struct{} // closed and replaced on every change
}

func collectEvents(t *testing.T, ns string) *eventLog {
	t.Helper()
	sub, err := SubscribeNS(ns)
	if err != nil {
		t.Fatal(err)
	}
	l := &eventLog{changed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			evs, err := sub.Receive()
			l.mu.Lock()
			l.events = append(l.events, evs...)
			if err != nil && l.err == nil {
				l.err = err
			}
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		sub.Close() // unblocks Receive
		<-done
		l.mu.Lock()
		defer l.mu.Unlock()
		for i, e := range l.events {
			t.Logf("%s event %d: %v", ns, i, e)
		}
	})
	return l
}

// waitFor returns the index and value of the first event matching match,
// waiting up to eventTimeout for it to arrive.
func (l *eventLog) waitFor(t *testing.T, what string, match func(Event) bool) (int, Event) {
	t.Helper()
	deadline := time.NewTimer(eventTimeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for i, e := range l.events {
			if match(e) {
				l.mu.Unlock()
				return i, e
			}
		}
		err, changed := l.err, l.changed
		l.mu.Unlock()
		if err != nil {
			t.Fatalf("waiting for %s: receive failed: %v", what, err)
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no %s event within %v", what, eventTimeout)
		}
	}
}

func isType(typ EventType) func(Event) bool {
	return func(e Event) bool { return e.Type == typ }
}

// mptcpToken reads the connection's local token with getsockopt(SOL_MPTCP,
// MPTCP_INFO), an independent source for the token the events must carry.
func mptcpToken(t *testing.T, c net.Conn) uint32 {
	t.Helper()
	const (
		solMPTCP       = 284 // SOL_MPTCP, linux/socket.h
		mptcpInfo      = 1   // MPTCP_INFO, linux/mptcp.h
		tokenOffset    = 12  // struct mptcp_info: 6 x u8, pad to 8, u32 flags, u32 token
		mptcpInfoBytes = 16
	)
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var buf [64]byte
	n := uint32(len(buf))
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall6(unix.SYS_GETSOCKOPT, fd, solMPTCP, mptcpInfo,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	if errno != 0 {
		t.Fatalf("getsockopt MPTCP_INFO: %v", errno)
	}
	if n < mptcpInfoBytes {
		t.Fatalf("getsockopt MPTCP_INFO returned %d bytes", n)
	}
	return binary.NativeEndian.Uint32(buf[tokenOffset:])
}

func addrPort(t *testing.T, a net.Addr) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

// TestKernelEvents opens one MPTCP connection between two namespaces joined by
// two veth pairs, with a second subflow from the client's second address, and
// checks the events both sides report.
//
//	client ns                          server ns
//	c1 10.0.1.1/24  <---- veth ---->   s1 10.0.1.2/24  (listener)
//	c2 10.0.2.1/24  <---- veth ---->   s2 10.0.2.2/24
func TestKernelEvents(t *testing.T) {
	testenv.RequireRoot(t)
	t.Parallel()
	cns, sns := testenv.Namespace(t, "mpnl-cli"), testenv.Namespace(t, "mpnl-srv")
	for _, i := range []string{"1", "2"} {
		ipNS(t, cns, "link", "add", "c"+i, "type", "veth", "peer", "name", "s"+i, "netns", sns)
		ipNS(t, cns, "addr", "add", "10.0."+i+".1/24", "dev", "c"+i)
		ipNS(t, sns, "addr", "add", "10.0."+i+".2/24", "dev", "s"+i)
		ipNS(t, cns, "link", "set", "c"+i, "up")
		ipNS(t, sns, "link", "set", "s"+i, "up")
	}
	// The extra subflow is bound to c2 (endpoint "dev c2") and goes to the
	// server's first address, so c2 needs a route there; the metric keeps
	// the initial subflow on c1's connected route.
	ipNS(t, cns, "route", "add", "10.0.1.0/24", "via", "10.0.2.2", "dev", "c2", "metric", "200")
	for _, ns := range []string{cns, sns} {
		ipNS(t, ns, "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2")
	}
	const subflowID = 7
	ipNS(t, cns, "mptcp", "endpoint", "add", "10.0.2.1", "id", strconv.Itoa(subflowID), "subflow", "dev", "c2")
	c2 := ifIndex(t, cns, "c2")

	cev, sev := collectEvents(t, cns), collectEvents(t, sns)

	ctx, cancel := context.WithTimeout(context.Background(), 3*eventTimeout)
	defer cancel()

	ln := testenv.Listen(t, sns, "10.0.1.2:0", true) // closed explicitly below
	lnAddr := addrPort(t, ln.Addr())
	_, e := sev.waitFor(t, "server LISTENER_CREATED", isType(EventListenerCreated))
	if e.Family != unix.AF_INET || e.Saddr != lnAddr.Addr() || e.Sport != lnAddr.Port() {
		t.Errorf("LISTENER_CREATED %v, want listener %v", e, lnAddr)
	}

	// The server echoes what it reads, so both sides send data and become
	// fully established.
	type accepted struct {
		conn net.Conn
		err  error
	}
	acc := make(chan accepted, 1)
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			buf := make([]byte, 5)
			if _, err = io.ReadFull(conn, buf); err == nil {
				_, err = conn.Write(buf)
			}
		}
		acc <- accepted{conn, err}
	}()

	var cconn net.Conn
	err := netns.Do(cns, func() error {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(10, 0, 1, 1)}}
		d.SetMultipathTCP(true)
		var err error
		cconn, err = d.DialContext(ctx, "tcp4", lnAddr.String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cconn.Close()
	// Go silently falls back to plain TCP; the test is meaningless then.
	if mp, err := cconn.(*net.TCPConn).MultipathTCP(); err != nil || !mp {
		t.Fatalf("client connection is not MPTCP (%v, %v)", mp, err)
	}
	if _, err := cconn.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(cconn, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	var sconn net.Conn
	select {
	case a := <-acc:
		if a.err != nil {
			t.Fatal(a.err)
		}
		sconn = a.conn
	case <-ctx.Done():
		t.Fatal("server did not accept and echo")
	}
	defer sconn.Close()

	cLocal, cRemote := addrPort(t, cconn.LocalAddr()), addrPort(t, cconn.RemoteAddr())
	cToken, sToken := mptcpToken(t, cconn), mptcpToken(t, sconn)
	t.Logf("client %v -> %v token %#x, server token %#x", cLocal, cRemote, cToken, sToken)

	// Client: the connection, then the extra subflow from endpoint 7 on c2.
	ci, e := cev.waitFor(t, "client CREATED", isType(EventCreated))
	checkConnEvent(t, "client CREATED", e, cToken, cLocal, cRemote, false)
	ei, e := cev.waitFor(t, "client ESTABLISHED", isType(EventEstablished))
	checkConnEvent(t, "client ESTABLISHED", e, cToken, cLocal, cRemote, false)
	si, csub := cev.waitFor(t, "client SUB_ESTABLISHED", isType(EventSubEstablished))
	if csub.Token != cToken || csub.Family != unix.AF_INET ||
		csub.Saddr != netip.MustParseAddr("10.0.2.1") || csub.Sport == 0 ||
		csub.Daddr != cRemote.Addr() || csub.Dport != cRemote.Port() ||
		csub.LocalID != subflowID || csub.RemoteID != 0 ||
		csub.IfIndex != c2 || csub.Backup || csub.Error != 0 {
		t.Errorf("client SUB_ESTABLISHED %v; want token %#x 10.0.2.1:* -> %v loc_id %d rem_id 0 ifindex %d",
			csub, cToken, cRemote, subflowID, c2)
	}
	if !(ci < ei && ci < si) {
		t.Errorf("client events out of order: CREATED #%d, ESTABLISHED #%d, SUB_ESTABLISHED #%d", ci, ei, si)
	}

	// Server: the same connection and subflow seen from the other end.
	_, e = sev.waitFor(t, "server CREATED", isType(EventCreated))
	checkConnEvent(t, "server CREATED", e, sToken, cRemote, cLocal, true)
	_, e = sev.waitFor(t, "server ESTABLISHED", isType(EventEstablished))
	checkConnEvent(t, "server ESTABLISHED", e, sToken, cRemote, cLocal, true)
	_, ssub := sev.waitFor(t, "server SUB_ESTABLISHED", isType(EventSubEstablished))
	if ssub.Token != sToken || ssub.Family != unix.AF_INET ||
		ssub.Saddr != cRemote.Addr() || ssub.Sport != cRemote.Port() ||
		ssub.Daddr != csub.Saddr || ssub.Dport != csub.Sport ||
		ssub.LocalID != 0 || ssub.RemoteID != subflowID || ssub.Backup {
		t.Errorf("server SUB_ESTABLISHED %v; want token %#x %v -> 10.0.2.1:%d loc_id 0 rem_id %d",
			ssub, sToken, cRemote, csub.Sport, subflowID)
	}

	// Closing ends the connection on both sides.
	cconn.Close()
	sconn.Close()
	closedI, e := cev.waitFor(t, "client CLOSED", isType(EventClosed))
	if e.Token != cToken {
		t.Errorf("client CLOSED token %#x, want %#x", e.Token, cToken)
	}
	if closedI < si {
		t.Errorf("client CLOSED (#%d) before SUB_ESTABLISHED (#%d)", closedI, si)
	}
	if _, e := sev.waitFor(t, "server CLOSED", isType(EventClosed)); e.Token != sToken {
		t.Errorf("server CLOSED token %#x, want %#x", e.Token, sToken)
	}
	ln.Close()
	if _, e := sev.waitFor(t, "server LISTENER_CLOSED", isType(EventListenerClosed)); e.Saddr != lnAddr.Addr() || e.Sport != lnAddr.Port() {
		t.Errorf("LISTENER_CLOSED %v, want listener %v", e, lnAddr)
	}

	// Every connection-scoped event on a side carries that side's token:
	// there is only one connection in these namespaces.
	for _, side := range []struct {
		name  string
		log   *eventLog
		token uint32
	}{{"client", cev, cToken}, {"server", sev, sToken}} {
		side.log.mu.Lock()
		for _, e := range side.log.events {
			if e.Type != EventListenerCreated && e.Type != EventListenerClosed && e.Token != side.token {
				t.Errorf("%s event %v has token %#x, want %#x", side.name, e, e.Token, side.token)
			}
		}
		side.log.mu.Unlock()
	}
}

// checkConnEvent checks a CREATED or ESTABLISHED event against the initial
// subflow's addresses as seen from that side.
func checkConnEvent(t *testing.T, what string, e Event, token uint32, local, remote netip.AddrPort, server bool) {
	t.Helper()
	if e.Token != token || e.Family != unix.AF_INET ||
		e.Saddr != local.Addr() || e.Sport != local.Port() ||
		e.Daddr != remote.Addr() || e.Dport != remote.Port() {
		t.Errorf("%s %v; want token %#x %v -> %v", what, e, token, local, remote)
	}
	if e.ServerSide != server {
		t.Errorf("%s ServerSide = %v, want %v", what, e.ServerSide, server)
	}
	// Since 6.18 the server side is (also) reported as a flag.
	if server && kernelAtLeast(t, 6, 18) && e.Flags&EventFlagServerSide == 0 {
		t.Errorf("%s flags %#x lack EventFlagServerSide", what, uint16(e.Flags))
	}
	if !server && e.Flags&EventFlagServerSide != 0 {
		t.Errorf("%s flags %#x have EventFlagServerSide on the client", what, uint16(e.Flags))
	}
}
