// SPDX-License-Identifier: Apache-2.0

package debian

import (
	"crypto/md5"
	"debug/elf"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// checkPackage checks, without installing it, what lintian would check
// first and what dpkg relies on: owners and modes, the control fields, the
// maintainer scripts, md5sums and conffiles, static binaries, a unit whose
// paths are the package's. (lintian itself pulls in 145 packages.)
func checkPackage(t *testing.T, deb string, es []entry) {
	t.Helper()
	paths := map[string]bool{}
	for _, e := range es {
		paths[e.path] = true
		want := "-rw-r--r--"
		switch {
		case strings.HasPrefix(e.mode, "d"):
			want = "drwxr-xr-x"
		case filepath.Dir(e.path) == "/usr/bin":
			want = "-rwxr-xr-x"
		}
		if e.mode != want || e.owner != "root/root" {
			t.Errorf("%s: %s %s, want %s root/root", e.path, e.mode, e.owner, want)
		}
		if strings.HasPrefix(e.path, "/usr/share/man/") && !strings.HasPrefix(e.mode, "d") && !strings.HasSuffix(e.path, ".gz") {
			t.Errorf("%s: man pages are installed gzipped", e.path)
		}
		if strings.HasPrefix(e.path, "/usr/local") {
			t.Errorf("%s: a package must not install under /usr/local", e.path)
		}
	}

	arch := strings.TrimSpace(run(t, "dpkg", "--print-architecture"))
	fields := map[string]*regexp.Regexp{
		"Package":        regexp.MustCompile(`^mptcp-cc$`),
		"Version":        regexp.MustCompile(`^[0-9][A-Za-z0-9.+~]*$`),
		"Architecture":   regexp.MustCompile(`^` + regexp.QuoteMeta(arch) + `$`),
		"Maintainer":     regexp.MustCompile(`^.+ <.+@.+>$`),
		"Installed-Size": regexp.MustCompile(`^[1-9][0-9]*$`),
		"Section":        regexp.MustCompile(`^net$`),
		"Priority":       regexp.MustCompile(`^optional$`),
		// A synopsis line, then the extended description's lines, indented.
		"Description": regexp.MustCompile(`^\S.{10,79}(\n \S.*)+$`),
	}
	for f, re := range fields {
		if v := strings.TrimSuffix(run(t, "dpkg-deb", "--field", deb, f), "\n"); !re.MatchString(v) {
			t.Errorf("control field %s: %q, want %s", f, v, re)
		}
	}
	if v := strings.TrimSpace(run(t, "dpkg-deb", "--field", deb, "Depends")); v != "" {
		t.Errorf("Depends: %q; the binaries are static and need nothing", v)
	}

	ctrl := t.TempDir()
	run(t, "dpkg-deb", "--control", deb, ctrl)
	for _, s := range []string{"postinst", "prerm", "postrm"} {
		b, err := os.ReadFile(filepath.Join(ctrl, s))
		st, serr := os.Stat(filepath.Join(ctrl, s))
		if err != nil || serr != nil || st.Mode().Perm() != 0o755 || !strings.HasPrefix(string(b), "#!/bin/sh\n") || !strings.Contains(string(b), "\nset -e\n") {
			t.Errorf("DEBIAN/%s: must be 0755, start with #!/bin/sh and set -e (%v %v)", s, err, serr)
		}
	}
	conffiles := strings.Fields(readFile(t, filepath.Join(ctrl, "conffiles")))
	if !slices.Equal(conffiles, []string{"/etc/mptcp-cc/config.yaml"}) {
		t.Errorf("conffiles: %q", conffiles)
	}

	data := t.TempDir()
	run(t, "dpkg-deb", "--extract", deb, data)
	// The machine-readable copyright file as written (TestCopyright checks it).
	if readFile(t, filepath.Join(data, "usr/share/doc/mptcp-cc/copyright")) != readFile(t, "copyright") {
		t.Error("/usr/share/doc/mptcp-cc/copyright is not deploy/debian/copyright")
	}
	sums := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(ctrl, "md5sums"))), "\n") {
		sum, p, ok := strings.Cut(l, "  ")
		if !ok {
			t.Fatalf("md5sums: %q", l)
		}
		sums["/"+p] = sum
	}
	for _, e := range es {
		if !strings.HasPrefix(e.mode, "-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(data, e.path))
		if err != nil {
			t.Fatal(err)
		}
		h := md5.Sum(b)
		switch want, listed := sums[e.path]; {
		case slices.Contains(conffiles, e.path):
			if listed {
				t.Errorf("md5sums lists the conffile %s (dpkg keeps its sum itself)", e.path)
			}
		case !listed:
			t.Errorf("md5sums does not list %s", e.path)
		case want != hex.EncodeToString(h[:]):
			t.Errorf("md5sums: wrong sum for %s", e.path)
		}
	}

	for _, p := range []string{"mptcp-cc", "mptcp-lab", "mptcp-xfer"} {
		f, err := elf.Open(filepath.Join(data, "usr/bin", p))
		if err != nil {
			t.Fatal(err)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				t.Errorf("/usr/bin/%s is dynamically linked; the package has no Depends for a libc", p)
			}
		}
		if f.Section(".symtab") != nil || f.Section(".debug_info") != nil {
			t.Errorf("/usr/bin/%s has symbols or debug info; Debian ships stripped binaries", p)
		}
		f.Close()
	}

	unit := readFile(t, filepath.Join(data, "lib/systemd/system/mptcp-cc.service"))
	if strings.Contains(unit, "/usr/local") {
		t.Errorf("the packaged unit names /usr/local:\n%s", unit)
	}
	for _, l := range strings.Split(unit, "\n") {
		k, v, _ := strings.Cut(l, "=")
		if k == "ExecStart" || k == "ExecStartPre" {
			if exe := strings.Fields(v)[0]; !paths[exe] {
				t.Errorf("unit %s runs %s, which the package does not install", k, exe)
			}
		}
		if k == "Documentation" {
			for _, d := range strings.Fields(v) {
				if p, ok := strings.CutPrefix(d, "file://"); ok && !paths[p] {
					t.Errorf("unit Documentation %s: the package does not install it", d)
				}
			}
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
