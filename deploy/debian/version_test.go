// SPDX-License-Identifier: Apache-2.0

package debian

import (
	"os/exec"
	"strings"
	"testing"
)

// Every form git describe takes maps to a Debian version that sorts where
// the commit does; the others fail, saying what to do.
func TestVersion(t *testing.T) {
	const stamp = "20261123074501"
	cases := []struct{ describe, want string }{
		{"v1.2.3", "1.2.3"},
		{"1.2.3", "1.2.3"},
		{"v1.2.3-rc1", "1.2.3~rc1"},
		{"v1.2.3-4-gabc1234", "1.2.3+git" + stamp + ".abc1234"},
		{"v1.2.3-rc1-4-gabc1234", "1.2.3~rc1+git" + stamp + ".abc1234"},
		{"abc1234", "0.0~git" + stamp + ".abc1234"},
		{"abc1234-dirty", "0.0~git" + stamp + ".abc1234+dirty"},
		{"v1.2.3-4-gabc1234-dirty", "1.2.3+git" + stamp + ".abc1234+dirty"},
		{"release-1", "error: tag the release vX.Y.Z, or set DEB_VERSION"},
		{"v1.2.3_final", "error: not a Debian version"},
	}
	for _, c := range cases {
		out, err := exec.Command("./version.sh", c.describe, stamp).CombinedOutput()
		got := strings.TrimSpace(string(out))
		if want, ok := strings.CutPrefix(c.want, "error: "); ok {
			if err == nil || !strings.Contains(got, want) {
				t.Errorf("%s: got %q (err %v), want a failure saying %q", c.describe, got, err, want)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %q (err %v), want %q", c.describe, got, err, c.want)
		}
	}
}

// Versions made from later commits or tags sort later, as dpkg compares
// them: what an upgrade relies on.
func TestVersionOrder(t *testing.T) {
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("dpkg compares the versions; this is not a Debian system")
	}
	order := [][2]string{ // describe, commit time
		{"abc1234", "20261123074501"},
		{"abc1234-dirty", "20261123074501"},
		{"def5678", "20261124000000"},
		{"v0.1.0-rc1", "20261125000000"},
		{"v0.1.0-rc1-2-g1234567", "20261126000000"},
		{"v0.1.0", "20261127000000"},
		{"v0.1.0-1-g89abcde", "20261128000000"},
		{"v0.1.1", "20261129000000"},
	}
	prev := ""
	for _, o := range order {
		out, err := exec.Command("./version.sh", o[0], o[1]).Output()
		if err != nil {
			t.Fatalf("%s: %v", o[0], err)
		}
		v := strings.TrimSpace(string(out))
		if prev != "" {
			if err := exec.Command("dpkg", "--compare-versions", prev, "lt", v).Run(); err != nil {
				t.Errorf("%s does not sort before %s (%s)", prev, v, o[0])
			}
		}
		prev = v
	}
}
