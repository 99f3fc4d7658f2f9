// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
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

func TestCString(t *testing.T) {
	if s := CString([]int8{'o', 'l', 'i', 'a', 0, 'x'}); s != "olia" {
		t.Errorf("int8: %q", s)
	}
	if s := CString([]uint8{'r', 'e', 'n', 'o'}); s != "reno" {
		t.Errorf("uint8 without NUL: %q", s)
	}
}
