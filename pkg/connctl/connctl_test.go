// SPDX-License-Identifier: Apache-2.0

package connctl_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/connctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// subflowsOf returns the live subflows of the connection with this token
// under one loaded CC.
func subflowsOf(t *testing.T, root, name string, token uint32) []stats.Subflow {
	t.Helper()
	var out []stats.Subflow
	for _, s := range testkernel.Subflows(t, root, name) {
		if s.Token == token {
			out = append(out, s)
		}
	}
	return out
}

// A running two-path transfer switches from one loaded CC to another: both
// subflows move, the old CC's state is released, the new one's created,
// and every byte arrives.
func TestSetCCLive(t *testing.T) {
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 20e6)
	from := testkernel.Load(t, root, "lia", cc.Params{})
	to := testkernel.Load(t, root, "balia", cc.Params{})

	srv := testkernel.Serve(t, n)
	const size = 8 << 20 // about 1.7 s at 2 x 20 Mbit/s
	c := testkernel.Start(t, n, srv, xfer.Options{CC: from, Bytes: size})

	// The connection's token, once both subflows run.
	var token uint32
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		all, err := stats.ReadAll(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range all {
			if s.Local == c.Local() {
				token = s.Token
			}
		}
		if token != 0 && len(subflowsOf(t, root, from, token)) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the connection never had two subflows under %s", from)
		}
	}
	time.Sleep(300 * time.Millisecond) // well into the transfer

	res, err := connctl.SetCC(token, to, n.Client)
	if err != nil {
		t.Fatalf("set: %v (%+v)", err, res)
	}
	if res.Switched() != 2 || len(res.Subflows) != 2 {
		t.Fatalf("switched %d of %d subflows, want 2 of 2: %+v", res.Switched(), len(res.Subflows), res)
	}
	paths := map[netip.Addr]bool{}
	for _, s := range res.Subflows {
		paths[s.Local.Addr()] = true
		if s.From != from || s.State != "established" {
			t.Errorf("subflow %+v: want an established subflow that ran %s", s, from)
		}
	}
	if !paths[topo.ClientAddr(0)] || !paths[topo.ClientAddr(1)] {
		t.Errorf("switched subflows leave from %v, want both paths", paths)
	}
	if subs := subflowsOf(t, root, to, token); len(subs) != 2 {
		t.Errorf("%d subflows of the connection under %s after the switch, want 2", len(subs), to)
	}
	if subs := subflowsOf(t, root, from, token); len(subs) != 0 {
		t.Errorf("%d subflows of the connection still under %s: %+v", len(subs), from, subs)
	}
	if c.Sent() >= size {
		t.Errorf("the transfer was over before the switch: measure nothing")
	}

	r, err := c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	testkernel.Receipt(t, "transfer after the switch", r, size)
}

// Bad input: clear errors, nothing switched.
func TestSetCCBadInput(t *testing.T) {
	root := testkernel.PinRoot(t)
	n := testkernel.Net(t, topo.Config{Paths: []int{0}, Bottlenecks: []topo.Shaping{{}}})
	name := testkernel.Load(t, root, "lia", cc.Params{})

	if _, err := connctl.SetCC(0x1234abcd, name, n.Client); !errors.Is(err, connctl.ErrNoConnection) ||
		!strings.Contains(err.Error(), "no MPTCP connection with token 1234abcd in network namespace "+n.Client) {
		t.Errorf("unknown token: %v", err)
	}
	if _, err := connctl.SetCC(1, "mptcp_olia", n.Client); !errors.Is(err, connctl.ErrNotRegistered) ||
		!strings.Contains(err.Error(), "mptcp-cc load --algo olia") {
		t.Errorf("CC not loaded: %v", err)
	}
	if _, err := connctl.SetCC(1, "no_such_cc", n.Client); !errors.Is(err, connctl.ErrNotRegistered) {
		t.Errorf("unknown CC: %v", err)
	}
	if _, err := connctl.SetCC(1, name, "mptcp-cc-no-such-netns"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing namespace: %v", err)
	}
	if _, err := connctl.SetCC(1, name, "../../proc/1/ns/net"); err == nil || !strings.Contains(err.Error(), "no '/'") {
		t.Errorf("a namespace path instead of a name: %v", err)
	}
	for _, s := range []string{"", "0x", "xyz", "123456789", "-1"} {
		if _, err := connctl.ParseToken(s); !errors.Is(err, connctl.ErrBadToken) {
			t.Errorf("token %q: %v, want ErrBadToken", s, err)
		}
	}
	for s, want := range map[string]uint32{"1234abcd": 0x1234abcd, "0x1234ABCD": 0x1234abcd, "ff": 0xff} {
		if v, err := connctl.ParseToken(s); err != nil || v != want {
			t.Errorf("token %q: %x, %v, want %x", s, v, err, want)
		}
	}
}
