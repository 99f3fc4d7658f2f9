// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// Every kernel file mptcp-cc reads (the sysctls of each network namespace,
// /proc/net, the kernel's BTF and config, the mount table) is read by this
// package, under root: "/" on a host, a fixture directory in tests
// (kerneltest.Root), so that the parsing and the error paths (a missing
// file, unexpected content, a namespace without MPTCP) are tested without
// a kernel that has them.
//
// Why one package-level root rather than a value (an FS) handed to every
// caller: a process has one kernel, and every caller already asks this
// package; a value would be threaded through doctor's options, the
// scheduler and path controller calls and the daemon for the tests' sake
// alone, and a caller could still hold the wrong one. With one root there
// is no second way to the files: nothing else in pkg/ names them
// (TestOnlyKernelReadsKernelFiles). The price: a test that sets it must
// not run in parallel with one that reads the real kernel.
var root = "/"

// SetRoot makes dir the root under which the kernel's files are read, and
// returns what restores the previous one. Only tests call it (through
// kerneltest.Root); a fixture holds the files at their paths below dir
// (dir/proc/sys/net/mptcp/enabled), and network namespace NAME's view of
// them below dir/netns/NAME.
func SetRoot(dir string) (restore func()) {
	prev := root
	root = dir
	return func() { root = prev }
}

// onHost reports whether the files read are the running kernel's.
func onHost() bool { return root == "/" }

// file is where the kernel file at absolute path p is read.
func file(p string) string { return filepath.Join(root, p) }

// inNetns runs fn with the directory under which network namespace ns
// ("" : the caller's) shows the kernel's files. On a host that is "/", read
// from a thread that entered the namespace (netns.Do): /proc/sys/net and
// /proc/thread-self/net follow the calling thread's namespace, not the
// process's. In a fixture it is root/netns/NAME.
func inNetns(ns string, fn func(dir string) error) error {
	if ns == "" {
		return fn(root)
	}
	if onHost() {
		return netns.Do(ns, func() error { return fn("/") })
	}
	if err := netns.CheckName(ns); err != nil {
		return err
	}
	dir := filepath.Join(root, "netns", ns)
	if _, err := os.Stat(dir); err != nil {
		// As netns.Do says it on a host.
		return fmt.Errorf("network namespace %q does not exist (`ip netns list` shows them)", ns)
	}
	return fn(dir)
}

// CheckNetns fails unless ns ("" : the caller's) names a network namespace
// that exists, saying how to list those that do.
func CheckNetns(ns string) error {
	if ns == "" {
		return nil
	}
	if err := netns.CheckName(ns); err != nil {
		return err
	}
	exists := netns.Exists(ns)
	if !onHost() {
		_, err := os.Stat(filepath.Join(root, "netns", ns))
		exists = err == nil
	}
	if !exists {
		return fmt.Errorf("network namespace %q does not exist (`ip netns list` shows those that do)", ns)
	}
	return nil
}
