// SPDX-License-Identifier: Apache-2.0

// Package kernel answers what every command asks before it touches the
// kernel: may this process load BPF, is bpffs mounted, which congestion
// controls are registered.
package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// The capabilities mptcp-cc needs, stated once: the error below, `doctor`,
// the systemd unit (deploy/mptcp-cc.service, checked by a test) and
// docs/fleet.md's table say the same.
var (
	// RequiredCapabilities load, pin and attach: CAP_BPF for bpf(2),
	// CAP_PERFMON for struct_ops programs (the CCs read struct sock),
	// CAP_NET_ADMIN for sock_ops programs (the policies) and the mptcp_pm
	// events. CAP_SYS_ADMIN alone also does (Sufficient).
	RequiredCapabilities = []string{"CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN"}
	// OptionalCapabilities: CAP_SYS_ADMIN mounts bpffs where nothing is
	// mounted and enters named network namespaces (the daemon's
	// events.namespaces); without it those two are refused.
	OptionalCapabilities = []string{"CAP_SYS_ADMIN"}
)

// ErrNotRoot says the process lacks the capabilities to load BPF.
var ErrNotRoot = errors.New("needs root, or " + strings.Join(RequiredCapabilities[:2], ", ") + " and " + RequiredCapabilities[2] + ": run it with sudo")

// AvailablePath lists the registered congestion controls (for messages:
// CongestionControls reads it).
const AvailablePath = "/proc/sys/net/ipv4/tcp_available_congestion_control"

// EffectiveCapabilities returns the process's effective capability set.
func EffectiveCapabilities() (uint64, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, fmt.Errorf("reading capabilities: %w", err)
	}
	return uint64(data[0].Effective) | uint64(data[1].Effective)<<32, nil
}

// Sufficient reports whether an effective capability set may load BPF,
// attach it and change the TCP stack: CAP_SYS_ADMIN, or CAP_BPF with
// CAP_NET_ADMIN and CAP_PERFMON (so a capable non-root service works).
func Sufficient(eff uint64) bool {
	has := func(c uint) bool { return eff&(1<<c) != 0 }
	return has(unix.CAP_SYS_ADMIN) || has(unix.CAP_BPF) && has(unix.CAP_NET_ADMIN) && has(unix.CAP_PERFMON)
}

// CheckPrivileges fails with ErrNotRoot unless the process's capabilities
// are Sufficient.
func CheckPrivileges() error {
	eff, err := EffectiveCapabilities()
	if err != nil {
		return err
	}
	if !Sufficient(eff) {
		return ErrNotRoot
	}
	return nil
}

// EnsureBPFFS mounts bpffs on /sys/fs/bpf when root lies below it and
// nothing is mounted there (some distributions and containers do not mount
// it), then creates root.
func EnsureBPFFS(root string) error {
	if strings.HasPrefix(filepath.Clean(root)+"/", "/sys/fs/bpf/") {
		var st unix.Statfs_t
		if err := unix.Statfs("/sys/fs/bpf", &st); err != nil {
			return fmt.Errorf("bpffs: %w", err)
		}
		if st.Type != unix.BPF_FS_MAGIC {
			if err := unix.Mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"); err != nil {
				return fmt.Errorf("mounting bpffs on /sys/fs/bpf: %w", err)
			}
		}
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("creating the pin root: %w", err)
	}
	return nil
}

// Release is the running kernel's release (uname -r), or "" if unknown; a
// fixture's is its kernel.osrelease.
func Release() string {
	if !onHost() {
		v, _ := Sysctl("", "kernel.osrelease")
		return v
	}
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// CongestionControls lists the congestion controls the kernel offers.
func CongestionControls() ([]string, error) {
	v, err := Sysctl("", "net.ipv4.tcp_available_congestion_control")
	if err != nil {
		return nil, err
	}
	return strings.Fields(v), nil
}

// HasCongestionControl reports whether one of that name is registered.
func HasCongestionControl(name string) bool {
	names, err := CongestionControls()
	return err == nil && slices.Contains(names, name)
}

// ErrNotRegistered says a congestion control is not registered.
var ErrNotRegistered = errors.New("is not a registered congestion control")

// RequireCongestionControl fails unless one of that name is registered; the
// error says how to load this project's algorithms.
func RequireCongestionControl(name string) error {
	if len(name) == 0 || len(name) > 15 {
		return fmt.Errorf("congestion control name %q must be 1 to 15 characters", name)
	}
	for _, c := range name {
		if c <= ' ' || c >= 0x7f {
			return fmt.Errorf("congestion control name %q has a character the kernel does not use", name)
		}
	}
	names, err := CongestionControls()
	if err != nil {
		return fmt.Errorf("cannot read %s to check %s: %w", AvailablePath, name, err)
	}
	if slices.Contains(names, name) {
		return nil
	}
	if algo, ok := strings.CutPrefix(name, "mptcp_"); ok {
		return fmt.Errorf("%s %w: load it first with `mptcp-cc load --algo %s`", name, ErrNotRegistered, algo)
	}
	return fmt.Errorf("%s %w (registered: %s; this project's are loaded with `mptcp-cc load --algo NAME`)",
		name, ErrNotRegistered, strings.Join(names, " "))
}
