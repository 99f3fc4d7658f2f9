// SPDX-License-Identifier: Apache-2.0

package debian

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

const pkgName = "mptcp-cc"

// What the package must install, beyond directories.
var wantFiles = []string{
	"/usr/bin/mptcp-cc", "/usr/bin/mptcp-lab", "/usr/bin/mptcp-xfer",
	"/lib/systemd/system/mptcp-cc.service",
	"/etc/mptcp-cc/config.yaml",
	"/usr/share/doc/mptcp-cc/README.md", "/usr/share/doc/mptcp-cc/docs/daemon.md",
	"/usr/share/doc/mptcp-cc/copyright", "/usr/share/doc/mptcp-cc/changelog.gz",
	"/usr/share/doc/mptcp-cc/third-party-licenses",
	"/usr/share/man/man1/mptcp-cc.1.gz", "/usr/share/man/man1/mptcp-lab.1.gz",
	"/usr/share/man/man1/mptcp-xfer.1.gz",
	"/usr/share/bash-completion/completions/mptcp-cc",
	"/usr/share/zsh/vendor-completions/_mptcp-cc",
}

// stop ends a test that cannot run here: a skip on a developer's machine,
// a failure in CI, which is a fresh Debian machine where it must run.
func stop(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func requireTool(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			stop(t, "needs "+n+", which every Debian system has")
		}
	}
}

// refuse stops a test that would harm what the machine's owner installed.
func refuse(t *testing.T, why string) {
	t.Helper()
	stop(t, why+": this test installs and purges the mptcp-cc package and will not touch yours; purge it (dpkg --purge mptcp-cc) or run the test on another machine")
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// dpkgRun runs dpkg, waiting while apt or another dpkg holds its lock.
func dpkgRun(args ...string) (string, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := exec.Command("dpkg", args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "lock") || time.Now().After(deadline) {
			if err != nil {
				err = errors.New("dpkg " + strings.Join(args, " ") + ": " + err.Error() + "\n" + string(out))
			}
			return string(out), err
		}
		time.Sleep(time.Second)
	}
}

// lockMachine serialises this test between the test processes of the
// machine (other worktrees run it too): one package name, one dpkg
// database. The lock is on the database's directory, so no file is left.
func lockMachine(t *testing.T) {
	t.Helper()
	f, err := os.Open("/var/lib/dpkg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			t.Fatalf("waiting for the other run of this test on this machine (flock /var/lib/dpkg): %v", err)
		}
	}
}

// status is dpkg's status of the package: "ii" installed, "rc" removed
// with its configuration kept, ..., and "" when neither files nor
// configuration are on the machine (dpkg does not know it, or says "un").
func status(t *testing.T) string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${db:Status-Abbrev}", pkgName).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "" // not known
		}
		t.Fatalf("dpkg-query: %v", err)
	}
	if st := strings.TrimSpace(string(out)); st != "un" {
		return st
	}
	return ""
}

// buildDeb runs `make deb` into a directory of the test's own.
func buildDeb(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := testenv.Make("../..", "deb", "DEB_OUT="+dir, "DEB_STAGE="+filepath.Join(dir, "stage"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make deb: %v\n%s", err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "mptcp-cc_*.deb"))
	if len(debs) != 1 {
		t.Fatalf("make deb made %v in %s, want one mptcp-cc_*.deb\n%s", debs, dir, out)
	}
	return debs[0]
}

// entry is one member of the package's data archive.
type entry struct{ mode, owner, path string }

func contents(t *testing.T, deb string) []entry {
	var es []entry
	sc := bufio.NewScanner(strings.NewReader(run(t, "dpkg-deb", "--contents", deb)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 {
			t.Fatalf("dpkg-deb --contents: %q", sc.Text())
		}
		p := strings.TrimSuffix(strings.TrimPrefix(f[5], "."), "/")
		if p == "" {
			p = "/"
		}
		es = append(es, entry{f[0], f[1], p})
	}
	return es
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// Installs the package built by `make deb` on this machine, uses what it
// installed, and purges it: nothing may be left but what was there before.
func TestInstallPurge(t *testing.T) {
	testenv.RequireRoot(t)
	requireTool(t, "dpkg", "dpkg-deb", "dpkg-query", "make", "git")
	lockMachine(t)
	if s := status(t); s != "" {
		refuse(t, "dpkg knows mptcp-cc on this machine (status "+s+")")
	}

	deb := buildDeb(t)
	es := contents(t, deb)
	checkPackage(t, deb, es)

	// Installing over files of the same paths that no package owns (a
	// from-source install) would overwrite them, and purging remove them.
	before := map[string]bool{}
	for _, e := range es {
		if exists(e.path) {
			if !strings.HasPrefix(e.mode, "d") {
				refuse(t, e.path+" exists and is not from the package")
			}
			before[e.path] = true
		}
	}
	if exists("/etc/mptcp-cc") {
		refuse(t, "/etc/mptcp-cc exists and purge would remove it")
	}
	t.Cleanup(func() {
		if status(t) != "" {
			if out, err := dpkgRun("--purge", pkgName); err != nil {
				t.Errorf("purging at cleanup: %v\n%s", err, out)
			}
		}
	})

	// path-include last: a machine whose dpkg configuration excludes
	// /usr/share/doc or man pages (container images do) installs them too.
	if _, err := dpkgRun("--install", "--path-include=*", deb); err != nil {
		t.Fatal(err)
	}
	if s := status(t); s != "ii" {
		t.Fatalf("after dpkg --install the status is %q, want ii", s)
	}
	var installed []string // dpkg -L, whose first line is "/."
	for _, p := range strings.Fields(run(t, "dpkg-query", "-L", pkgName)) {
		installed = append(installed, filepath.Clean(p))
	}
	for _, f := range wantFiles {
		if !slices.Contains(installed, f) || !exists(f) {
			t.Errorf("%s: not installed", f)
		}
	}
	if out, err := dpkgRun("--verify", pkgName); err != nil || out != "" {
		t.Errorf("dpkg --verify (the md5sums): %v\n%s", err, out)
	}

	useInstalled(t)

	// Remove keeps the administrator's configuration, edits included; purge
	// then removes it.
	const conf = "/etc/mptcp-cc/config.yaml"
	edited := readFile(t, conf) + "# edited by TestInstallPurge\n"
	if err := os.WriteFile(conf, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := dpkgRun("--remove", pkgName); err != nil {
		t.Fatal(err)
	}
	if s := status(t); s != "rc" {
		t.Errorf("after dpkg --remove the status is %q, want rc (config files left)", s)
	}
	if b, err := os.ReadFile(conf); err != nil || string(b) != edited {
		t.Errorf("dpkg --remove did not keep the edited %s: %v", conf, err)
	}
	if exists("/usr/bin/mptcp-cc") {
		t.Error("dpkg --remove left /usr/bin/mptcp-cc")
	}

	if _, err := dpkgRun("--purge", pkgName); err != nil {
		t.Fatal(err)
	}
	if s := status(t); s != "" {
		t.Errorf("after purge dpkg still knows the package: status %q", s)
	}
	if out, _ := exec.Command("dpkg", "-s", pkgName).CombinedOutput(); !strings.Contains(string(out), "not installed") && !strings.Contains(string(out), "not-installed") {
		t.Errorf("dpkg -s after purge does not say not installed:\n%s", out)
	}
	for _, p := range installed {
		if before[p] != exists(p) {
			t.Errorf("%s: existed before install: %v, exists after purge: %v", p, before[p], exists(p))
		}
	}
	for _, p := range []string{"/etc/mptcp-cc", "/lib/systemd/system/mptcp-cc.service", "/usr/bin/mptcp-cc"} {
		if exists(p) {
			t.Errorf("%s is left after purge", p)
		}
	}
}

// useInstalled runs the installed commands the way the docs tell users to.
func useInstalled(t *testing.T) {
	t.Helper()
	const bin = "/usr/bin/mptcp-cc"
	run(t, bin, "serve", "--config.check", "--config", "/etc/mptcp-cc/config.yaml")

	root := testkernel.PinRoot(t)
	name := testenv.Unique("t_deb_")
	testkernel.UnloadAtCleanup(t, root, name)
	run(t, bin, "load", "--algo", "lia", "--name", name, "--bpffs", root)
	if !cc.IsRegistered(name) {
		t.Errorf("%s load --name %s: the kernel does not list it", bin, name)
	}
	if out := run(t, bin, "list", "--bpffs", root); !strings.Contains(out, name) {
		t.Errorf("%s list does not show %s:\n%s", bin, name, out)
	}
	run(t, bin, "unload", "--name", name, "--bpffs", root)
	if cc.IsRegistered(name) {
		t.Errorf("%s unload --name %s: still registered", bin, name)
	}

	commit := strings.TrimSpace(run(t, "git", "rev-parse", "HEAD"))
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.Contains(string(out), commit[:7]) {
		t.Errorf("%s version does not name the commit built, %s: %v\n%s", bin, commit[:7], err, out)
	}

	for _, p := range []string{"mptcp-cc", "mptcp-lab", "mptcp-xfer"} {
		page := "/usr/share/man/man1/" + p + ".1.gz"
		if roff := gunzip(t, page); !strings.Contains(roff, ".TH ") {
			t.Errorf("%s is not a man page (no .TH):\n%.200s", page, roff)
		}
		run(t, "bash", "-n", "/usr/share/bash-completion/completions/"+p)
		zsh := "/usr/share/zsh/vendor-completions/_" + p
		if b, err := os.ReadFile(zsh); err != nil || !bytes.HasPrefix(b, []byte("#compdef "+p)) {
			t.Errorf("%s: %v, does not start with #compdef %s", zsh, err, p)
		}
		if _, err := exec.LookPath("zsh"); err == nil || os.Getenv("CI") != "" { // make deps installs zsh
			run(t, "zsh", "-n", zsh)
		}
	}
	if _, err := exec.LookPath("man"); err == nil {
		if out := strings.TrimSpace(run(t, "man", "-w", "mptcp-cc")); out != "/usr/share/man/man1/mptcp-cc.1.gz" {
			t.Errorf("man -w mptcp-cc: %s", out)
		}
	}
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	z, err := gzip.NewReader(strings.NewReader(readFile(t, path)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(b)
}
