// SPDX-License-Identifier: Apache-2.0

package release

import (
	"archive/tar"
	"compress/gzip"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// makeRelease runs `make release` into a directory of the test's own and
// returns it.
func makeRelease(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := testenv.Make("../..", "release", "RELEASE_OUT="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	return dir
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out)
}

// `make release` makes an archive and a package per architecture with
// their sums, each holding what an operator installs; a second run of the
// same commit makes the same bytes.
func TestRelease(t *testing.T) {
	testenv.RequireTool(t, "dpkg-deb", "dpkg")
	first := makeRelease(t)

	sums, err := os.ReadFile(filepath.Join(first, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(run(t, "../debian/version.sh"))
	var want []string
	for _, arch := range []string{"amd64", "arm64"} {
		want = append(want, "mptcp-cc_"+version+"_"+arch+".deb", "mptcp-cc_"+version+"_linux_"+arch+".tar.gz")
	}
	slices.Sort(want)
	var listed []string
	for _, l := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 || len(f[0]) != 64 {
			t.Fatalf("SHA256SUMS line %q", l)
		}
		listed = append(listed, f[1])
	}
	if !slices.Equal(listed, want) {
		t.Fatalf("SHA256SUMS lists %q, want %q", listed, want)
	}
	cmd := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
	cmd.Dir = first
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum --check: %v\n%s", err, out)
	}

	epoch, err := strconv.ParseInt(strings.TrimSpace(run(t, "git", "log", "-1", "--format=%ct")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arch    string
		machine elf.Machine
	}{{"amd64", elf.EM_X86_64}, {"arm64", elf.EM_AARCH64}} {
		checkArchive(t, filepath.Join(first, "mptcp-cc_"+version+"_linux_"+c.arch+".tar.gz"), c.machine, epoch)
		deb := filepath.Join(first, "mptcp-cc_"+version+"_"+c.arch+".deb")
		if got := strings.TrimSpace(run(t, "dpkg-deb", "--field", deb, "Architecture")); got != c.arch {
			t.Errorf("%s: Architecture %q, want %q", filepath.Base(deb), got, c.arch)
		}
		if got := strings.TrimSpace(run(t, "dpkg-deb", "--field", deb, "Version")); got != version {
			t.Errorf("%s: Version %q, want %q", filepath.Base(deb), got, version)
		}
		data := t.TempDir()
		run(t, "dpkg-deb", "--extract", deb, data)
		checkStatic(t, filepath.Join(data, "usr/bin/mptcp-cc"), c.machine)
	}

	// Reproducible: the same commit, built again, gives the same bytes.
	second := makeRelease(t)
	again, err := os.ReadFile(filepath.Join(second, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(sums) {
		t.Errorf("two releases of one commit differ:\nfirst:\n%s\nsecond:\n%s", sums, again)
	}
}

// checkArchive reads a release archive: one top directory named as the
// archive, root-owned entries with the commit's time, the binaries static
// for the architecture, and everything an install needs.
func checkArchive(t *testing.T, path string, machine elf.Machine, epoch int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	top := strings.TrimSuffix(filepath.Base(path), ".tar.gz") + "/"
	tr := tar.NewReader(zr)
	got := map[string]bool{}
	dir := t.TempDir()
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		name, ok := strings.CutPrefix(h.Name, top)
		if !ok {
			t.Errorf("%s: %s is outside %s", filepath.Base(path), h.Name, top)
			continue
		}
		got[strings.TrimSuffix(name, "/")] = true
		if h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != epoch {
			t.Errorf("%s: %s owned %d:%d at %d, want 0:0 at the commit's time %d", filepath.Base(path), h.Name, h.Uid, h.Gid, h.ModTime.Unix(), epoch)
		}
		if strings.HasPrefix(name, "bin/") && h.Typeflag == tar.TypeReg {
			if h.Mode&0o777 != 0o755 {
				t.Errorf("%s: mode %o", h.Name, h.Mode)
			}
			p := filepath.Join(dir, filepath.Base(name))
			b, err := io.ReadAll(tr)
			if err != nil || os.WriteFile(p, b, 0o644) != nil {
				t.Fatalf("%s: %v", h.Name, err)
			}
			checkStatic(t, p, machine)
		}
	}
	for _, p := range []string{"bin/mptcp-cc", "bin/mptcp-lab", "bin/mptcp-xfer",
		"share/man/man1/mptcp-cc.1", "share/bash-completion/completions/mptcp-cc", "share/zsh/vendor-completions/_mptcp-cc",
		"lib/systemd/system/mptcp-cc.service", "etc/mptcp-cc/config.yaml",
		"share/doc/mptcp-cc/README.md", "share/doc/mptcp-cc/CHANGELOG.md", "share/doc/mptcp-cc/docs/package.md"} {
		if !got[p] {
			t.Errorf("%s lacks %s", filepath.Base(path), p)
		}
	}
	if _, err := os.Stat("../../LICENSE"); err == nil && !got["share/doc/mptcp-cc/LICENSE"] {
		t.Errorf("%s lacks the LICENSE", filepath.Base(path))
	}
}

// checkStatic: an ELF executable of the machine with no interpreter (no
// libc to match on the target); mptcp-cc with the commit stamped in, which
// `mptcp-cc version` prints.
func checkStatic(t *testing.T, path string, machine elf.Machine) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("%s: machine %v, want %v", path, f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s: has an ELF interpreter: not static", path)
		}
	}
	if filepath.Base(path) != "mptcp-cc" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(run(t, "git", "rev-parse", "HEAD"))
	if !regexp.MustCompile(regexp.QuoteMeta(commit)).Match(b) {
		t.Errorf("%s: the commit %s is not stamped in", path, commit)
	}
}
