// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"strings"
	"testing"
)

func TestParseMountinfo(t *testing.T) {
	in := `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime shared:7 - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 master:2 - cgroup2 cgroup2 rw
50 23 0:40 / /mnt/with\040space rw - cgroup2 none rw
garbage
`
	got, err := parseMountinfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{"/sys/fs/cgroup", "tmpfs"}, {"/sys/fs/cgroup/cpu", "cgroup"},
		{"/sys/fs/cgroup/unified", "cgroup2"}, {"/mnt/with space", "cgroup2"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
