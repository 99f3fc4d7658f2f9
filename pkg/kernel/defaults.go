// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// The sysctls that decide which congestion control a TCP socket gets when
// it asks for none: the namespace's default, and the list of those a
// namespace other than the host's may make its default (global; the kernel
// refuses any other with EPERM there).
const (
	defaultCCSysctl = "net.ipv4.tcp_congestion_control"
	allowedCCSysctl = "net.ipv4.tcp_allowed_congestion_control"
)

// NamespaceDefault is one network namespace's default congestion control.
type NamespaceDefault struct {
	Namespace string // "host", "netns NAME" (ip netns), or "pid N's namespace"
	CC        string
}

// DefaultCongestionControls reads net.ipv4.tcp_congestion_control in every
// network namespace this host has: the host's, the named ones (ip netns),
// and those only a process holds (containers). Each is entered once, by
// its handle (/proc/PID/ns/net): so it reads the running kernel whatever
// the root (SetRoot), and needs root (setns).
func DefaultCongestionControls() ([]NamespaceDefault, error) {
	type ns struct{ path, label string }
	seen := map[uint64]ns{}
	add := func(path, label string) {
		var st unix.Stat_t
		if unix.Stat(path, &st) != nil {
			return
		}
		if _, ok := seen[st.Ino]; !ok {
			seen[st.Ino] = ns{path, label}
		}
	}
	add("/proc/1/ns/net", "host")
	if names, err := os.ReadDir(netns.Dir); err == nil {
		for _, e := range names {
			add(netns.Path(e.Name()), "netns "+e.Name())
		}
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	for _, e := range procs {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			add(filepath.Join("/proc", e.Name(), "ns", "net"), fmt.Sprintf("pid %d's namespace", pid))
		}
	}
	var out []NamespaceDefault
	for _, n := range seen {
		var cc string
		err := netns.DoPath(n.path, func() error {
			b, err := os.ReadFile(sysctlPath("/", defaultCCSysctl))
			cc = strings.TrimSpace(string(b))
			return err
		})
		if err != nil {
			continue // the process exited meanwhile
		}
		out = append(out, NamespaceDefault{Namespace: n.label, CC: cc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out, nil
}

// DefaultIn lists the namespaces whose default congestion control is name.
func DefaultIn(name string) ([]string, error) {
	all, err := DefaultCongestionControls()
	if err != nil {
		return nil, err
	}
	var in []string
	for _, d := range all {
		if d.CC == name {
			in = append(in, d.Namespace)
		}
	}
	return in, nil
}

// AllowCongestionControl adds name to net.ipv4.tcp_allowed_congestion_control,
// so that any network namespace may make it its default (the host's may
// anyway). The list is global; adding one already there does nothing.
func AllowCongestionControl(name string) error {
	v, err := Sysctl("", allowedCCSysctl)
	if err != nil {
		return err
	}
	allowed := strings.Fields(v)
	for _, a := range allowed {
		if a == name {
			return nil
		}
	}
	allowed = append(allowed, name)
	if err := SetSysctl("", allowedCCSysctl, strings.Join(allowed, " ")); err != nil {
		return fmt.Errorf("adding %s to net.ipv4.tcp_allowed_congestion_control: %w", name, err)
	}
	return nil
}
