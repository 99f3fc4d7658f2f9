// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// Use makes name the scheduler of new MPTCP connections in a network
// namespace (net.mptcp.scheduler; "" is the caller's namespace). The kernel
// takes only registered schedulers; the error lists those it has.
func Use(name, ns string) error {
	if err := kernel.CheckNetns(ns); err != nil {
		return err
	}
	avail, err := availableIn(ns)
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
	if err := kernel.SetSysctl(ns, "net.mptcp.scheduler", name); err != nil {
		return fmt.Errorf("setting net.mptcp.scheduler=%s: %w", name, err)
	}
	return nil
}

// Current returns the scheduler a network namespace gives new connections.
func Current(ns string) (string, error) {
	if err := kernel.CheckNetns(ns); err != nil {
		return "", err
	}
	v, err := kernel.Sysctl(ns, "net.mptcp.scheduler")
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNoMPTCP
	}
	return v, err
}
