// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"net"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

func TestParseMPTCPMIB(t *testing.T) {
	in := "TcpExt: SyncookiesSent Foo\nTcpExt: 1 2\nMPTcpExt: MPCapableSYNRX DataCsumErr MPTCPRetrans\nMPTcpExt: 7 0 123456789012\n"
	m, err := parseMPTCPMIB(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || m["MPCapableSYNRX"] != 7 || m["DataCsumErr"] != 0 || m["MPTCPRetrans"] != 123456789012 {
		t.Fatalf("%v", m)
	}
	for _, bad := range []string{
		"TcpExt: A\nTcpExt: 1\n",       // no MPTCP
		"MPTcpExt: A B\nMPTcpExt: 1\n", // short
		"MPTcpExt: A\nMPTcpExt: x\n",   // not a number
	} {
		if _, err := parseMPTCPMIB(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The running kernel's counters, in this namespace.
func TestMPTCPMIB(t *testing.T) {
	m, err := MPTCPMIB("")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"MPCapableSYNRX", "MPTCPRetrans", "DataCsumErr", "MPJoinSynRx"} {
		if _, ok := m[name]; !ok {
			t.Errorf("no %s among %d counters", name, len(m))
		}
	}
}

// A named namespace's counters are its own: one MPTCP connection made in a
// fresh namespace counts one MP_CAPABLE SYN there.
func TestMPTCPMIBInNamespace(t *testing.T) {
	ns := testenv.Namespace(t, "mpcc-mib")
	ln := testenv.Listen(t, ns, "127.0.0.1:0", true)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	d := net.Dialer{}
	d.SetMultipathTCP(true)
	err := netns.Do(ns, func() error {
		c, err := d.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := MPTCPMIB(ns)
	if err != nil {
		t.Fatal(err)
	}
	if m["MPCapableSYNRX"] != 1 || m["MPCapableSYNTX"] != 1 {
		t.Fatalf("in the fresh namespace %s: MPCapableSYNRX %d, MPCapableSYNTX %d; want 1 and 1", ns, m["MPCapableSYNRX"], m["MPCapableSYNTX"])
	}
}

func TestMIBDelta(t *testing.T) {
	got := MIBDelta(map[string]uint64{"A": 1, "B": 5, "C": 7}, map[string]uint64{"A": 1, "B": 9, "C": 7, "D": 2})
	if len(got) != 2 || got["B"] != 4 || got["D"] != 2 {
		t.Errorf("MIBDelta = %v, want B 4 and D 2 only", got)
	}
}
