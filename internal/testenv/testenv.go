// SPDX-License-Identifier: Apache-2.0

// Package testenv is the base the tests share, whatever they test: root,
// unique names, network namespaces, listeners inside them, the gates of the
// long runs, and binaries built once per test process. Everything a test
// creates is removed at cleanup, even when the test fails.
//
// It imports nothing of this module but pkg/netns (which imports nothing of
// it either), so every package's tests can use it, including those of the
// packages that pkg/cc and lab/topo are built from (lab/linkem, pkg/mptcpnl).
// What needs the project's kernel side (congestion controls, pins, topo
// networks, transfers) is in internal/testkernel, on top of this.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// RequireRoot stops the test unless it runs as root. In CI (CI=true) that is
// a failure, not a skip: these are the tests that matter there.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("this test needs root (BPF, network namespaces); CI must run it as root")
	}
	t.Skip("needs root (BPF, network namespaces)")
}

// RequireTool returns the path of the command name, which `make deps`
// installs (from the Debian package pkg). Without it the test is skipped,
// except in CI (CI=true), where it fails: there make deps has run.
func RequireTool(t testing.TB, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed: `make deps` installs it (Debian package %s)", name, pkg)
	}
	t.Skipf("needs %s: run `make deps` (Debian package %s)", name, pkg)
	return ""
}

// Suffix returns six random hex digits, for names that must not collide
// with what a user or another test created. Short, because kernel names
// (congestion controls: 15 characters) are.
func Suffix() string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// Unique returns prefix followed by a random suffix.
func Unique(prefix string) string { return prefix + Suffix() }

// Namespace creates a network namespace named prefix-SUFFIX, loopback up,
// and deletes it at cleanup. It needs root.
func Namespace(t testing.TB, prefix string) string {
	t.Helper()
	RequireRoot(t)
	name := prefix + "-" + Suffix()
	if err := netns.Create(name); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := netns.Delete(name); err != nil {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
	return name
}

// ListenIn opens a TCP listener on addr inside the named namespace ns; an
// MPTCP one if mptcp. The socket stays in ns; it may be used from any
// goroutine.
func ListenIn(ns, addr string, mptcp bool) (ln net.Listener, err error) {
	lc := net.ListenConfig{}
	lc.SetMultipathTCP(mptcp)
	err = netns.Do(ns, func() (err error) {
		ln, err = lc.Listen(context.Background(), "tcp", addr)
		return err
	})
	return ln, err
}

// Listen is ListenIn for a test: a failure ends it, and the listener is
// closed at cleanup (closing it earlier is fine).
func Listen(t testing.TB, ns, addr string, mptcp bool) net.Listener {
	t.Helper()
	ln, err := ListenIn(ns, addr, mptcp)
	if err != nil {
		t.Fatalf("listening on %s in %q: %v", addr, ns, err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// The long runs are gated by environment variables (make bench, make soak).
const (
	BenchEnv       = "MPTCP_CC_BENCH" // the project's benchmarks
	LinkemBenchEnv = "LINKEM_BENCH"   // lab/linkem's benchmark, when set to 1
	SoakEnv        = "MPTCP_CC_SOAK"  // the soak tests
)

// Bench skips the test unless MPTCP_CC_BENCH is set (make bench).
func Bench(t testing.TB) {
	t.Helper()
	if os.Getenv(BenchEnv) == "" {
		t.Skip("benchmark: set " + BenchEnv + "=1 (make bench)")
	}
}

// LinkemBench skips the test unless LINKEM_BENCH=1 (make bench).
func LinkemBench(t testing.TB) {
	t.Helper()
	if os.Getenv(LinkemBenchEnv) != "1" {
		t.Skip("set " + LinkemBenchEnv + "=1 to run the benchmark")
	}
}

// Soak skips the test unless MPTCP_CC_SOAK is set (make soak).
func Soak(t testing.TB, what string) {
	t.Helper()
	if os.Getenv(SoakEnv) == "" {
		t.Skip("set " + SoakEnv + "=1 (make soak) to run " + what)
	}
}

// Binaries built by Binary live in one directory per test process, which
// Main removes when the tests are done.
var built struct {
	sync.Mutex
	main bool              // Main runs the tests
	dir  string            // created on the first build
	bins map[string]string // package -> binary
	errs map[string]error
}

// Main runs the tests of a package whose tests call Binary, then removes
// the binaries. Call it from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	built.Lock()
	built.main = true
	built.Unlock()
	code := m.Run()
	built.Lock()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	built.Unlock()
	os.Exit(code)
}

// Binary builds the command in pkg (a path as `go build` takes it, relative
// to the test's package directory: "." or "../../cmd/mptcp-cc") once per
// test process and returns the binary's path. The binary and its directory
// are readable and executable by every user, so a test may run it without
// privileges.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if !built.main {
		t.Fatal("testenv.Binary needs testenv.Main in the package's TestMain (it removes the binaries)")
	}
	if bin, ok := built.bins[pkg]; ok {
		return bin
	}
	if err, ok := built.errs[pkg]; ok {
		t.Fatal(err)
	}
	bin, err := build(pkg)
	if err != nil {
		if built.errs == nil {
			built.errs = map[string]error{}
		}
		built.errs[pkg] = err
		t.Fatal(err)
	}
	if built.bins == nil {
		built.bins = map[string]string{}
	}
	built.bins[pkg] = bin
	return bin
}

func build(pkg string) (string, error) {
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "mptcp-cc-test-bin")
		if err != nil {
			return "", err
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			return "", err
		}
		built.dir = dir
	}
	abs, err := filepath.Abs(pkg)
	if err != nil {
		return "", err
	}
	// A directory per package keeps the command's own name.
	sub := filepath.Join(built.dir, fmt.Sprint(len(built.bins)+len(built.errs)))
	if err := os.Mkdir(sub, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(sub, filepath.Base(abs))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// SyncBuffer collects what a process or logger writes while the test reads
// it: Write and String may be called from different goroutines.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Make is `make -C dir args...` for a test that runs a target of the
// project's Makefile, without the flags of a make above it (make test),
// which would otherwise pass its own goals and jobs down.
func Make(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", dir}, args...)...)
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, e)
		}
	}
	return cmd
}

// Module is this module's import path, with the slash that starts a
// package's path below it.
const Module = "github.com/mptcp-cc/mptcp-cc/"

// ModuleDeps lists the packages of this module that the packages named
// by patterns (go list patterns, relative to the test's directory) are
// built from, themselves included, as paths below Module ("pkg/cc"):
// what the tests that keep the layout's rules check.
func ModuleDeps(t testing.TB, patterns ...string) []string {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, patterns...)
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var deps []string
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, Module); ok {
			deps = append(deps, rel)
		}
	}
	return deps
}
