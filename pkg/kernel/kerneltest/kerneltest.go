// SPDX-License-Identifier: Apache-2.0

// Package kerneltest gives tests a kernel made of files: a fixture
// directory that pkg/kernel reads instead of the running kernel's /proc and
// /sys, so a test can show a kernel without MPTCP, a namespace whose
// sysctl holds something unexpected, or a missing file.
package kerneltest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// Root writes files (path below the root, as "proc/sys/net/mptcp/enabled",
// to content; a later map's file replaces an earlier's) into a new
// directory, makes it the root pkg/kernel reads from until the test ends,
// and returns it. Network namespace NAME's files go below "netns/NAME/". A
// test that calls it must not be parallel: the root is the process's.
func Root(t testing.TB, files ...map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, m := range files {
		for p, content := range m {
			Write(t, dir, p, content)
		}
	}
	t.Cleanup(kernel.SetRoot(dir))
	return dir
}

// Write adds or replaces one file of a fixture root.
func Write(t testing.TB, root, path, content string) {
	t.Helper()
	full := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Remove takes a file (or a directory and all below it) out of a fixture
// root: the kernel without it.
func Remove(t testing.TB, root, path string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(root, path)); err != nil {
		t.Fatal(err)
	}
}

// MPTCP is the sysctls of a namespace with MPTCP enabled, the in-kernel
// path manager and the default scheduler, below prefix ("" for the
// caller's namespace, "netns/NAME/" for NAME's).
func MPTCP(prefix string) map[string]string {
	return map[string]string{
		prefix + "proc/sys/net/mptcp/enabled":               "1\n",
		prefix + "proc/sys/net/mptcp/pm_type":               "0\n",
		prefix + "proc/sys/net/mptcp/path_manager":          "kernel\n",
		prefix + "proc/sys/net/mptcp/checksum_enabled":      "0\n",
		prefix + "proc/sys/net/mptcp/scheduler":             "default\n",
		prefix + "proc/sys/net/mptcp/available_schedulers":  "default\n",
		prefix + "proc/sys/net/ipv4/tcp_congestion_control": "cubic\n",
	}
}

// BTF writes the fixture's kernel BTF (sys/kernel/btf/vmlinux) holding an
// empty struct of each name: enough for the preflight, which looks types
// up by name (bpf_struct_ops_mptcp_sched_ops, ...).
func BTF(t testing.TB, root string, structs ...string) {
	t.Helper()
	var types []btf.Type
	for _, s := range structs {
		types = append(types, &btf.Struct{Name: s})
	}
	b, err := btf.NewBuilder(types, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	Write(t, root, "sys/kernel/btf/vmlinux", string(raw))
}
