// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPinDirs(t *testing.T) {
	root := t.TempDir()
	if d, err := PinDirs(filepath.Join(root, "missing")); err != nil || d != nil {
		t.Fatalf("missing root: %v, %v; want nothing and no error", d, err)
	}
	for _, n := range []string{"b", "a"} {
		if err := os.Mkdir(filepath.Join(root, n), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := PinDirs(root)
	if err != nil || !slices.Equal(d, []string{"a", "b"}) {
		t.Fatalf("got %v, %v; want [a b]", d, err)
	}
}

// An empty root goes; one with anything in it, a file and a mount point
// stay.
func TestRemoveEmptyRoot(t *testing.T) {
	dir := t.TempDir()
	empty, full, file := filepath.Join(dir, "empty"), filepath.Join(dir, "full"), filepath.Join(dir, "file")
	for _, d := range []string{empty, full, filepath.Join(full, "olia")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !RemoveEmptyRoot(empty) {
		t.Error("an empty root stayed")
	}
	for _, p := range []string{full, file} {
		if RemoveEmptyRoot(p) {
			t.Errorf("%s was removed", p)
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if RemoveEmptyRoot(filepath.Join(dir, "missing")) {
		t.Error("a missing root reported removed")
	}
	if os.Geteuid() != 0 {
		return
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("bpf", mnt, "bpf", 0, "mode=0700"); err != nil {
		t.Fatalf("mounting a private bpffs: %v", err)
	}
	defer unix.Unmount(mnt, unix.MNT_DETACH)
	if RemoveEmptyRoot(mnt) {
		t.Error("an empty bpffs mount point was removed")
	}
}

func TestCString(t *testing.T) {
	if s := CString([]int8{'o', 'l', 'i', 'a', 0, 'x'}); s != "olia" {
		t.Errorf("int8: %q", s)
	}
	if s := CString([]uint8{'r', 'e', 'n', 'o'}); s != "reno" {
		t.Errorf("uint8 without NUL: %q", s)
	}
}
