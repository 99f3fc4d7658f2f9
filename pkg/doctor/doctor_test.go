// SPDX-License-Identifier: Apache-2.0

package doctor

import "testing"

func TestReady(t *testing.T) {
	if !Ready([]Finding{{Severity: OK}, {Severity: Warn}, {Severity: Info}}) {
		t.Error("warnings made the host not ready")
	}
	if Ready([]Finding{{Severity: OK}, {Severity: Fail}}) {
		t.Error("a failure left the host ready")
	}
}

// A fix names the namespace it is for, so it can be pasted as it is.
func TestInNS(t *testing.T) {
	for _, c := range []struct{ ns, cmd, want string }{
		{"", "ip mptcp limits set subflows 2", "ip mptcp limits set subflows 2"},
		{"lab", "ip mptcp limits set subflows 2", "ip -n lab mptcp limits set subflows 2"},
		{"lab", "sysctl -w net.mptcp.enabled=1", "ip netns exec lab sysctl -w net.mptcp.enabled=1"},
	} {
		if got := inNS(Options{Netns: c.ns}, c.cmd); got != c.want {
			t.Errorf("inNS(%q, %q) = %q, want %q", c.ns, c.cmd, got, c.want)
		}
	}
}
