// SPDX-License-Identifier: Apache-2.0

package debian

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// paragraph is one deb822 paragraph of the copyright file: its fields,
// continuation lines joined with "\n".
type paragraph map[string]string

func parseDeb822(t *testing.T, text string) []paragraph {
	t.Helper()
	var ps []paragraph
	var p paragraph
	key := ""
	for n, l := range strings.Split(text, "\n") {
		switch {
		case strings.TrimSpace(l) == "":
			p, key = nil, ""
		case strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t"):
			if key == "" {
				t.Fatalf("copyright line %d: a continuation line with no field above it", n+1)
			}
			p[key] += "\n" + l
		default:
			k, v, ok := strings.Cut(l, ":")
			if !ok {
				t.Fatalf("copyright line %d: %q is neither a field nor a continuation", n+1, l)
			}
			if p == nil {
				p = paragraph{}
				ps = append(ps, p)
			}
			if _, dup := p[k]; dup {
				t.Fatalf("copyright line %d: field %s twice in one paragraph", n+1, k)
			}
			key = k
			p[k] = strings.TrimSpace(v)
		}
	}
	return ps
}

// dep5Glob turns a Files pattern into a regexp: in DEP-5, * matches any
// run of characters, slashes included, and ? one character.
func dep5Glob(pat string) *regexp.Regexp {
	var b strings.Builder
	for _, r := range pat {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return regexp.MustCompile("^" + b.String() + "$")
}

// The DEP-5 short names used here, and the SPDX identifiers the source
// files use for the same licenses.
var dep5ToSPDX = map[string]string{"Apache-2.0": "Apache-2.0", "GPL-2": "GPL-2.0-only", "BSD-2-clause": "BSD-2-Clause"}

var spdxLine = regexp.MustCompile(`SPDX-License-Identifier: ([^*\n]*[^*\n ])`)

// TestCopyright checks deploy/debian/copyright as the machine-readable
// format (DEP-5) defines it, and against the source tree it describes:
// every license it names has its text, every Files pattern matches files,
// the BSD text is LICENSES/'s, and for every source file the license the
// last matching Files paragraph gives is the one its SPDX line says.
func TestCopyright(t *testing.T) {
	ps := parseDeb822(t, readFile(t, "copyright"))
	if len(ps) < 2 || ps[0]["Format"] != "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" {
		t.Fatalf("the first paragraph must be the header, Format: the copyright-format 1.0 URL; got %v", ps[0])
	}
	texts := map[string]bool{}
	var files []paragraph
	for _, p := range ps[1:] {
		switch {
		case p["Files"] != "":
			for _, f := range []string{"Copyright", "License"} {
				if p[f] == "" {
					t.Errorf("Files: %s has no %s field", p["Files"], f)
				}
			}
			files = append(files, p)
		case p["License"] != "":
			name, body, _ := strings.Cut(p["License"], "\n")
			if strings.TrimSpace(body) == "" {
				t.Errorf("License: %s has no text", name)
			}
			texts[name] = true
		default:
			t.Errorf("a paragraph that is neither Files nor License: %v", p)
		}
	}
	// licenseOf maps a Files paragraph's License to the SPDX expression.
	licenseOf := func(p paragraph) string {
		var spdx []string
		for _, name := range strings.Split(strings.Split(p["License"], "\n")[0], " or ") {
			if !texts[name] {
				t.Errorf("Files: %s names license %s, which no License paragraph gives", p["Files"], name)
			}
			id, ok := dep5ToSPDX[name]
			if !ok {
				t.Fatalf("license %s: add its SPDX identifier to dep5ToSPDX", name)
			}
			spdx = append(spdx, id)
		}
		return strings.Join(spdx, " OR ")
	}

	// Debian ships no BSD-2-clause text, so the file carries it: the same
	// words as LICENSES/, past its copyright line.
	_, bsd, _ := strings.Cut(readFile(t, "../../LICENSES/BSD-2-Clause.txt"), "\n")
	for _, p := range ps[1:] {
		if name, body, _ := strings.Cut(p["License"], "\n"); name == "BSD-2-clause" && p["Files"] == "" {
			got := strings.Join(strings.Fields(strings.ReplaceAll(body, "\n .", "")), " ")
			if want := strings.Join(strings.Fields(bsd), " "); got != want {
				t.Errorf("the BSD-2-clause text differs from LICENSES/BSD-2-Clause.txt:\n%s\nwant:\n%s", got, want)
			}
		}
	}

	matched := make([]int, len(files))
	checked := 0
	// The source tree is what git tracks: build outputs, caches and lab
	// results in the working tree are not covered by the copyright file.
	root := "../.."
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files (the source tree to check): %v", err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		path := filepath.Join(root, rel)
		if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
			continue // deleted in the working tree, or a symlink
		}
		last := -1
		for i, p := range files {
			for _, pat := range strings.Fields(p["Files"]) {
				if dep5Glob(pat).MatchString(filepath.ToSlash(rel)) {
					last = i
				}
			}
		}
		if last < 0 {
			t.Errorf("%s: no Files paragraph covers it", rel)
			continue
		}
		matched[last]++
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 512)
		n, _ := f.Read(head)
		f.Close()
		// The line is the first or, after a shebang, the second.
		lines := strings.SplitN(string(head[:n]), "\n", 3)
		if len(lines) > 2 {
			lines = lines[:2]
		}
		if m := spdxLine.FindStringSubmatch(strings.Join(lines, "\n")); m != nil {
			checked++
			if want := licenseOf(files[last]); m[1] != want {
				t.Errorf("%s says %s, but the copyright file (Files: %s) gives %s", rel, m[1], files[last]["Files"], want)
			}
		}
	}
	for i, p := range files {
		if matched[i] == 0 {
			t.Errorf("Files: %s matches no file of the source tree (or a later paragraph overrides it everywhere)", p["Files"])
		}
	}
	if checked < 100 {
		t.Errorf("only %d files with an SPDX line compared; the walk missed the source tree", checked)
	}
}
