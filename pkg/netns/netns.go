// SPDX-License-Identifier: Apache-2.0

// Package netns creates named network namespaces (the ones `ip netns` shows)
// and runs code inside them.
//
// Only the network namespace is entered, never the mount namespace: `ip netns
// exec` remounts /sys without bpffs, which hides pinned BPF objects, so code
// that must read pins from inside a namespace uses Do instead.
package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is where iproute2 keeps its named namespaces.
const Dir = "/run/netns"

// Path returns the bind-mount path of the named namespace.
func Path(name string) string { return filepath.Join(Dir, name) }

// Inode is the named namespace's inode number, what the kernel's
// net->ns.inum holds: how a BPF program tells a namespace's sockets apart.
func Inode(name string) (uint32, error) {
	if name == "" {
		return 0, errors.New("no namespace given")
	}
	var st unix.Stat_t
	if err := unix.Stat(Path(name), &st); err != nil {
		return 0, fmt.Errorf("network namespace %q: %w", name, err)
	}
	return uint32(st.Ino), nil
}

// Create makes a new named namespace with its loopback up.
func Create(name string) error {
	if err := run("ip", "netns", "add", name); err != nil {
		return err
	}
	if err := Exec(name, "ip", "link", "set", "lo", "up"); err != nil {
		_ = Delete(name)
		return err
	}
	return nil
}

// Delete removes the named namespace. A missing namespace is not an error, so
// cleanup code can call it unconditionally.
func Delete(name string) error {
	if _, err := os.Stat(Path(name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return run("ip", "netns", "del", name)
}

// Exists reports whether the named namespace exists.
func Exists(name string) bool {
	if CheckName(name) != nil {
		return false
	}
	_, err := os.Stat(Path(name))
	return err == nil
}

// CheckName refuses what `ip netns` refuses: a name is one file in Dir, and
// "../x" or "a/b" would enter a namespace file elsewhere (--netns
// ../../proc/1/ns/net is the host's).
func CheckName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("network namespace name %q: want a name as `ip netns list` shows it (no '/')", name)
	}
	return nil
}

// Exec runs a command inside the namespace and returns its error together with
// its combined output, so failures name what went wrong.
func Exec(name string, argv ...string) error {
	return run(append([]string{"ip", "netns", "exec", name}, argv...)...)
}

// Output runs a command inside the namespace and returns its standard output.
func Output(name string, argv ...string) (string, error) {
	cmd := exec.Command("ip", append([]string{"netns", "exec", name}, argv...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// Do runs fn on an OS thread that has joined the named network namespace.
// Sockets and TUN devices created inside fn belong to that namespace and stay
// there after Do returns; they may then be used from any goroutine.
func Do(name string, fn func() error) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if _, err := os.Stat(Path(name)); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("network namespace %q does not exist (`ip netns list` shows them)", name)
	}
	return DoPath(Path(name), fn)
}

// DoPath is Do for a namespace given by path (e.g. /proc/PID/ns/net).
func DoPath(path string, fn func() error) error {
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open network namespace: %w", err)
	}
	defer target.Close()

	errc := make(chan error, 1)
	go func() {
		// This goroutine's thread is dedicated to the namespace switch. If we
		// cannot switch back, returning without UnlockOSThread makes the
		// runtime throw the thread away instead of reusing it elsewhere.
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("setns back: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

func run(argv ...string) error {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Run runs a command in the caller's namespace, with its output in the error.
func Run(argv ...string) error { return run(argv...) }
