// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSufficient(t *testing.T) {
	bit := func(c ...uint) (m uint64) {
		for _, x := range c {
			m |= 1 << x
		}
		return m
	}
	cases := []struct {
		eff  uint64
		want bool
	}{
		{0, false},
		{bit(unix.CAP_SYS_ADMIN), true},
		{bit(unix.CAP_BPF, unix.CAP_NET_ADMIN, unix.CAP_PERFMON), true},
		{bit(unix.CAP_BPF, unix.CAP_NET_ADMIN), false},
		{bit(unix.CAP_NET_ADMIN, unix.CAP_PERFMON), false},
	}
	for _, c := range cases {
		if got := Sufficient(c.eff); got != c.want {
			t.Errorf("Sufficient(%#x) = %v, want %v", c.eff, got, c.want)
		}
	}
}

func TestRequireCongestionControl(t *testing.T) {
	if err := RequireCongestionControl("reno"); err != nil {
		t.Errorf("reno: %v", err)
	}
	for _, bad := range []string{"", "sixteen_chars_xx", "has space"} {
		if err := RequireCongestionControl(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	err := RequireCongestionControl("mptcp_nosuch")
	if err == nil || !strings.Contains(err.Error(), "mptcp-cc load --algo nosuch") {
		t.Errorf("missing mptcp_ CC: %v, want the load hint", err)
	}
}

// TestConfigHZ reads CONFIG_HZ among the other options, and nothing from
// a config without it.
func TestConfigHZ(t *testing.T) {
	if hz := configHZ(strings.NewReader("# CONFIG_HZ_1000 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_X=1\n")); hz != 250 {
		t.Errorf("CONFIG_HZ=250 read as %d", hz)
	}
	if hz := configHZ(strings.NewReader("CONFIG_X=1\n")); hz != 0 {
		t.Errorf("a config without CONFIG_HZ read as %d", hz)
	}
	t.Logf("this kernel: HZ=%d", HZ())
}
