// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// sysctlPath is where sysctl name ("net.mptcp.enabled") is under dir.
func sysctlPath(dir, name string) string {
	return filepath.Join(dir, "proc/sys", strings.ReplaceAll(name, ".", "/"))
}

// Sysctl reads sysctl name ("net.mptcp.scheduler") in network namespace
// ns ("" : the caller's), without its trailing newline. Where the kernel
// has no such sysctl (a kernel without MPTCP, in that namespace), the
// error is errors.Is fs.ErrNotExist.
func Sysctl(ns, name string) (string, error) {
	var v string
	err := inNetns(ns, func(dir string) error {
		b, err := os.ReadFile(sysctlPath(dir, name))
		v = strings.TrimSpace(string(b))
		return err
	})
	return v, err
}

// SysctlExists reads sysctl name in ns as Sysctl does, with ok false and
// no error where the kernel has no such sysctl.
func SysctlExists(ns, name string) (value string, ok bool, err error) {
	v, err := Sysctl(ns, name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	return v, err == nil, err
}

// SetSysctl writes value to sysctl name in network namespace ns.
func SetSysctl(ns, name, value string) error {
	return inNetns(ns, func(dir string) error {
		return os.WriteFile(sysctlPath(dir, name), []byte(value), 0o644)
	})
}
