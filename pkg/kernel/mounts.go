// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Mount is one line of the mount table.
type Mount struct {
	Point  string // where it is mounted
	FSType string // "cgroup2", "bpf", ...
}

// Mounts is this process's mount table (/proc/self/mountinfo), in its
// order: of two mounts on one point, the later is the one seen there.
func Mounts() ([]Mount, error) {
	f, err := os.Open(file("/proc/self/mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	defer f.Close()
	return parseMountinfo(f)
}

// BPFFSMounted reports whether the mount seen on dir (the last one there
// in the mount table) is a bpf filesystem.
func BPFFSMounted(dir string) (bool, error) {
	mounts, err := Mounts()
	if err != nil {
		return false, err
	}
	fstype := ""
	for _, m := range mounts {
		if m.Point == dir {
			fstype = m.FSType
		}
	}
	return fstype == "bpf", nil
}

// parseMountinfo reads the mount point and filesystem type of each line of
// /proc/PID/mountinfo (see proc(5)): the fifth field is the mount point,
// with spaces and other special characters escaped as octal \NNN; the
// filesystem type is the first field after the " - " separator.
func parseMountinfo(r io.Reader) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i, x := range f {
			if x == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if len(f) < 5 || sep < 0 || sep+1 >= len(f) {
			continue
		}
		out = append(out, Mount{Point: unescapeMount(f[4]), FSType: f[sep+1]})
	}
	return out, sc.Err()
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
