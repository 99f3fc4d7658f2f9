// SPDX-License-Identifier: Apache-2.0

package sockdiag_test

import (
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// privateNS creates a network namespace for the test and removes it after.
func privateNS(t *testing.T) string {
	t.Helper()
	testenv.RequireRoot(t)
	name := fmt.Sprintf("sockdiag-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	if err := netns.Create(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := netns.Delete(name); err != nil {
			t.Error(err)
		}
	})
	return name
}

// connect opens a connection over the namespace's loopback with the given
// congestion control on the client side; both ends close at cleanup.
func connect(t *testing.T, ns, ccName string, mptcp bool) (client, server net.Conn) {
	t.Helper()
	setCC := func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, ccName)
		}); err != nil {
			return err
		}
		return serr
	}
	accepted := make(chan net.Conn, 1)
	err := netns.Do(ns, func() error {
		var lc net.ListenConfig
		lc.SetMultipathTCP(mptcp)
		ln, err := lc.Listen(t.Context(), "tcp4", "127.0.0.1:0")
		if err != nil {
			return err
		}
		go func() {
			defer ln.Close()
			c, err := ln.Accept()
			if err != nil {
				t.Error(err)
			}
			accepted <- c
		}()
		d := net.Dialer{Control: setCC}
		d.SetMultipathTCP(mptcp)
		client, err = d.Dial("tcp4", ln.Addr().String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server = <-accepted
	if server == nil {
		t.FailNow()
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

func find(list []sockdiag.Socket, local, remote net.Addr) *sockdiag.Socket {
	l := local.(*net.TCPAddr).AddrPort()
	r := remote.(*net.TCPAddr).AddrPort()
	for i := range list {
		if list[i].Local == l && list[i].Remote == r {
			return &list[i]
		}
	}
	return nil
}

// A TCP connection in a private namespace shows, in that namespace only,
// with the congestion control its socket chose and a live tcp_info.
func TestKernelTCPConnection(t *testing.T) {
	ns := privateNS(t)
	client, server := connect(t, ns, "reno", false)
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}

	d, err := sockdiag.DialNS(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	list, err := d.TCP(unix.AF_INET, sockdiag.Connected)
	if err != nil {
		t.Fatal(err)
	}
	c := find(list, client.LocalAddr(), client.RemoteAddr())
	if c == nil {
		t.Fatalf("the client socket %s is not in the dump: %+v", client.LocalAddr(), list)
	}
	if c.CC != "reno" || c.State != sockdiag.Established || c.MPTCP || c.Token != 0 || c.Info.Snd_cwnd == 0 || c.Info.State != sockdiag.Established {
		t.Fatalf("client socket %+v", c)
	}
	if s := find(list, server.LocalAddr(), server.RemoteAddr()); s == nil || s.CC == "" {
		t.Fatalf("server socket %+v", s)
	}

	// Both families: the same sockets (nothing IPv6 here).
	both, err := d.TCP(0, sockdiag.Connected)
	if err != nil || len(both) != len(list) {
		t.Fatalf("both families: %d sockets (%v), IPv4 alone %d", len(both), err, len(list))
	}
	// The listener is gone (it accepted once), so nothing listens.
	if ls, err := d.TCP(unix.AF_INET, sockdiag.Listening); err != nil || len(ls) != 0 {
		t.Fatalf("listening: %+v, %v", ls, err)
	}

	// The host namespace does not see it.
	host, err := sockdiag.Dump("", unix.AF_INET, sockdiag.Connected)
	if err != nil {
		t.Fatal(err)
	}
	if c := find(host, client.LocalAddr(), client.RemoteAddr()); c != nil {
		t.Fatalf("the host namespace lists the private namespace's socket: %+v", c)
	}
}

// An MPTCP connection's subflows carry the ULP "mptcp" and the connection's
// local token.
func TestKernelMPTCPSubflow(t *testing.T) {
	ns := privateNS(t)
	if out, err := netns.Output(ns, "sysctl", "-n", "net.mptcp.enabled"); err != nil || strings.TrimSpace(out) != "1" {
		t.Skipf("MPTCP is not enabled (%q, %v)", out, err)
	}
	client, server := connect(t, ns, "reno", true)
	if mp, err := client.(*net.TCPConn).MultipathTCP(); err != nil || !mp {
		t.Skipf("the connection fell back to TCP (%v)", err)
	}
	list, err := sockdiag.Dump(ns, 0, sockdiag.Connected)
	if err != nil {
		t.Fatal(err)
	}
	c := find(list, client.LocalAddr(), client.RemoteAddr())
	s := find(list, server.LocalAddr(), server.RemoteAddr())
	if c == nil || s == nil {
		t.Fatalf("subflows not found (client %v, server %v) in %+v", c, s, list)
	}
	if !c.MPTCP || c.Token == 0 || !s.MPTCP || s.Token == 0 || c.Token == s.Token || c.CC != "reno" {
		t.Fatalf("client subflow %+v\nserver subflow %+v", c, s)
	}
}
