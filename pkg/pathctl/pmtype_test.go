// SPDX-License-Identifier: Apache-2.0

package pathctl

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel/kerneltest"
)

// pmType reads net.mptcp.pm_type per namespace; a namespace without MPTCP
// or with something else in the knob is an error, which Run takes as "not
// the userspace path manager".
func TestPMTypeFromFixture(t *testing.T) {
	kerneltest.Root(t, map[string]string{
		"proc/sys/net/mptcp/pm_type":                           "0\n",
		"netns/mptcpd/proc/sys/net/mptcp/pm_type":              "1\n",
		"netns/odd/proc/sys/net/mptcp/pm_type":                 "userspace\n",
		"netns/plain/proc/sys/net/ipv4/tcp_congestion_control": "cubic\n",
	})
	for ns, want := range map[string]int{"": 0, "mptcpd": 1} {
		if got, err := pmType(ns); err != nil || got != want {
			t.Errorf("pmType(%q) = %d, %v; want %d", ns, got, err, want)
		}
	}
	if _, err := pmType("odd"); err == nil {
		t.Error("pm_type \"userspace\" read as a number")
	}
	if _, err := pmType("plain"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pmType without MPTCP: %v, want fs.ErrNotExist", err)
	}
}
