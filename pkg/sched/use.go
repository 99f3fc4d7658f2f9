// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

const schedulerSysctl = "/proc/sys/net/mptcp/scheduler"

// Use makes name the scheduler of new MPTCP connections in a network
// namespace (net.mptcp.scheduler; "" is the caller's namespace). The kernel
// takes only registered schedulers; the error lists those it has.
func Use(name, ns string) error {
	return inNetns(ns, func() error {
		avail, err := Available()
		if err != nil {
			return err
		}
		found := false
		for _, a := range avail {
			found = found || a == name
		}
		if !found {
			return fmt.Errorf("scheduler %q is not registered (this namespace has: %s): load it first with `mptcp-cc sched load`", name, strings.Join(avail, " "))
		}
		if err := os.WriteFile(schedulerSysctl, []byte(name), 0o644); err != nil {
			return fmt.Errorf("setting net.mptcp.scheduler=%s: %w", name, err)
		}
		return nil
	})
}

// Current returns the scheduler a network namespace gives new connections.
func Current(ns string) (string, error) {
	var out string
	err := inNetns(ns, func() error {
		b, err := os.ReadFile(schedulerSysctl)
		if errors.Is(err, os.ErrNotExist) {
			return ErrNoMPTCP
		}
		out = strings.TrimSpace(string(b))
		return err
	})
	return out, err
}

func inNetns(ns string, fn func() error) error {
	if ns == "" {
		return fn()
	}
	if err := netns.CheckName(ns); err != nil {
		return err
	}
	if !netns.Exists(ns) {
		return fmt.Errorf("network namespace %q does not exist (`ip netns list` shows those that do)", ns)
	}
	return netns.Do(ns, fn)
}
