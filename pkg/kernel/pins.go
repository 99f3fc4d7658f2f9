// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// PinDirs lists the directories directly under a pin root, one per loaded
// object (a congestion control, a cgroup's policy). A root that does not
// exist yet holds nothing, which is not an error.
func PinDirs(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs, nil
}

// RemoveEmptyRoot removes a pin root once nothing is pinned under it, so
// that unloading or detaching the last object leaves nothing behind in
// bpffs, and says whether it did. It never removes /sys/fs/bpf, a root that
// still holds anything (rmdir refuses: ENOTEMPTY), a mount point (EBUSY:
// bpffs itself, wherever it is mounted) or a file; a root that stays is
// harmless, so there is no error to report.
func RemoveEmptyRoot(root string) bool {
	if filepath.Clean(root) == "/sys/fs/bpf" {
		return false
	}
	return unix.Rmdir(root) == nil
}

// CString returns the NUL-terminated string in a fixed-size char array of a
// BPF struct (bpf2go renders C char as int8, __u8 as uint8).
func CString[T ~int8 | ~uint8](b []T) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// CongestionControlSet is CongestionControls as a set, for many lookups.
func CongestionControlSet() (map[string]bool, error) {
	names, err := CongestionControls()
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set, nil
}
