// Package testenv gives tests that need the real kernel what they share:
// root, a private bpffs, congestion controls loaded under unique names, and
// cleanup that runs even when the test fails.
package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/topo"
)

// RequireRoot stops the test unless it runs as root. In CI (CI=true) that is
// a failure, not a skip: these are the tests that matter there.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("this test needs root (BPF, network namespaces); CI must run it as root")
	}
	t.Skip("needs root (BPF, network namespaces)")
}

// PinRoot mounts a private bpffs instance for the test and returns a pin
// root inside it. Unmounting at cleanup drops every pin left in it, so even
// a test that forgot to unload leaves nothing registered.
func PinRoot(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "bpffs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		t.Fatalf("mounting a private bpffs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return filepath.Join(dir, "mptcp-cc")
}

// Load loads an algorithm under a unique name (so tests never collide with
// what a user loaded) and unloads it at cleanup. It returns the name.
func Load(t testing.TB, root, algo string, p cc.Params) string {
	t.Helper()
	a, err := cc.Lookup(algo)
	if err != nil {
		t.Fatal(err)
	}
	name := "t_" + algo + "_" + topo.Suffix()
	if err := cc.Load(a, cc.Options{Name: name, PinRoot: root, Params: p}); err != nil {
		t.Fatalf("loading %s: %v", algo, err)
	}
	t.Cleanup(func() {
		if err := cc.Unload(name, root); err != nil {
			t.Errorf("unloading %s: %v", name, err)
		}
	})
	return name
}

// Net builds a topology and removes it at cleanup.
func Net(t testing.TB, cfg topo.Config) *topo.Net {
	t.Helper()
	RequireRoot(t)
	n, err := topo.Build(cfg)
	if err != nil {
		t.Fatalf("building the network: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("removing the network: %v", err)
		}
	})
	return n
}
