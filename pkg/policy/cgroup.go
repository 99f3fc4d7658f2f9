// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// Errors callers can test for (errors.Is).
var (
	ErrNoCgroup2 = errors.New("no cgroup v2 hierarchy is mounted (cgroup2 in /proc/self/mountinfo): mount one, e.g. `mount -t cgroup2 none /sys/fs/cgroup/unified`")
	ErrNotCgroup = errors.New("not a cgroup v2 directory")
	ErrCgroupV1  = errors.New("is a cgroup v1 directory: sock_ops policies attach to cgroup v2 only")
)

// CgroupMount returns where the cgroup v2 hierarchy is mounted (the first
// cgroup2 mount in /proc/self/mountinfo): /sys/fs/cgroup on unified
// systems, /sys/fs/cgroup/unified on hybrid ones.
func CgroupMount() (string, error) {
	mounts, err := kernel.Mounts()
	if err != nil {
		return "", err
	}
	for _, m := range mounts {
		if m.FSType == "cgroup2" {
			return m.Point, nil
		}
	}
	return "", ErrNoCgroup2
}

// cgroup is a resolved cgroup v2 directory.
type cgroup struct {
	path string // absolute, symlinks resolved
	id   uint64 // the kernel's cgroup id (the directory's inode number)
}

// resolveCgroup checks that dir is a cgroup v2 directory and returns its
// absolute path and id. A relative dir is taken relative to the cgroup v2
// mount point (e.g. "system.slice/foo.service").
func resolveCgroup(dir string) (cgroup, error) {
	if err := checkCgroupArg(dir); err != nil {
		return cgroup{}, err
	}
	mnt, mntErr := CgroupMount()
	p := dir
	if !filepath.IsAbs(p) {
		if mntErr != nil {
			return cgroup{}, mntErr
		}
		p = filepath.Join(mnt, p)
	}
	abs, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return cgroup{}, fmt.Errorf("cgroup %s does not exist (create it with mkdir; %s)", p, mountHint(mnt, mntErr))
		}
		return cgroup{}, fmt.Errorf("cgroup %s: %w", p, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(abs, &st); err != nil {
		return cgroup{}, fmt.Errorf("cgroup %s: %w", abs, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return cgroup{}, fmt.Errorf("%s: %w (it is not even a directory)", abs, ErrNotCgroup)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(abs, &fs); err != nil {
		return cgroup{}, fmt.Errorf("cgroup %s: %w", abs, err)
	}
	switch fs.Type {
	case unix.CGROUP2_SUPER_MAGIC:
		return cgroup{path: abs, id: st.Ino}, nil
	case unix.CGROUP_SUPER_MAGIC:
		return cgroup{}, fmt.Errorf("%s %w; %s", abs, ErrCgroupV1, mountHint(mnt, mntErr))
	default:
		return cgroup{}, fmt.Errorf("%s: %w; %s", abs, ErrNotCgroup, mountHint(mnt, mntErr))
	}
}

// checkCgroupArg refuses "..": a relative path is promised to stay below
// the cgroup v2 mount, and an absolute one should name the cgroup as the
// kernel shows it (/proc/PID/cgroup), not a walk that might leave the mount.
func checkCgroupArg(dir string) error {
	if dir == "" {
		return errors.New("no cgroup given: name a cgroup v2 directory")
	}
	for _, part := range strings.Split(dir, "/") {
		if part == ".." {
			return fmt.Errorf("cgroup %q contains \"..\": name the cgroup directly, relative to the cgroup v2 mount (system.slice/app.service) or absolute (/sys/fs/cgroup/system.slice/app.service)", dir)
		}
	}
	return nil
}

func mountHint(mnt string, err error) string {
	if err != nil {
		return "no cgroup v2 hierarchy is mounted"
	}
	return "the cgroup v2 hierarchy is mounted at " + mnt
}
