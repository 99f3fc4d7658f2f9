// SPDX-License-Identifier: Apache-2.0

package topo

// Housekeeping of named namespaces: the processes inside them, and what a
// killed builder left behind.

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// KillProcesses kills (SIGKILL) every process whose network namespace is ns.
func KillProcesses(ns string) {
	if !netns.Exists(ns) {
		return
	}
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(out)) {
		_ = exec.Command("kill", "-9", f).Run()
	}
}

// ListPrefix returns the named namespaces whose name starts with prefix.
func ListPrefix(prefix string) ([]string, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns list: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// CleanPrefix kills the processes in, and removes, every namespace whose
// name starts with prefix: what a killed builder left behind (emulated
// links die with their process; veths, routes and qdiscs with their
// namespace). It returns the names removed.
func CleanPrefix(prefix string) ([]string, error) {
	if prefix == "" {
		return nil, errors.New("refusing to clean with an empty prefix")
	}
	names, err := ListPrefix(prefix)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ns := range names {
		KillProcesses(ns)
		if err := netns.Delete(ns); err != nil {
			errs = append(errs, err)
		}
	}
	return names, errors.Join(errs...)
}
