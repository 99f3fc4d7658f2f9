// SPDX-License-Identifier: Apache-2.0

package matrix

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// What `make matrix` sets.
const (
	outEnv     = "MPTCP_CC_MATRIX"         // the directory results are kept in between runs; its presence runs TestMatrix
	kernelsEnv = "MPTCP_CC_MATRIX_KERNELS" // a comma-separated subset of the rows (default: all)
	redoEnv    = "MPTCP_CC_MATRIX_REDO"    // run kernels again even when a result is kept
	docsEnv    = "MPTCP_CC_MATRIX_DOCS"    // the document whose marked part gets the table (docs/kernels.md)
	lockEnv    = "MPTCP_CC_MATRIX_LOCK"    // a lock file held while each kernel runs (the machine's network-test lock)
)

// TestMatrix is the whole support matrix (`make matrix`, not in CI): each
// kernel of Kernels booted (or the host's, in place), the full check in
// each, the results kept per kernel in MPTCP_CC_MATRIX (a kernel with a
// kept result is not run again unless MPTCP_CC_MATRIX_REDO is set;
// MPTCP_CC_MATRIX_KERNELS runs some, in its order), then
// the table written into MPTCP_CC_MATRIX_DOCS and the results, as JSON,
// beside it.
func TestMatrix(t *testing.T) {
	out := os.Getenv(outEnv)
	if out == "" {
		t.Skipf("the support matrix: `make matrix` runs it (%s=DIR)", outEnv)
	}
	testenv.RequireRoot(t)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := testenv.Binary(t, "../../cmd/mptcp-cc")
	cctest := buildCCTest(t)
	var want []string
	if s := os.Getenv(kernelsEnv); s != "" {
		want = strings.Split(s, ",")
		for _, k := range want {
			if _, err := Lookup(k); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := Kernels
	if want != nil {
		// In the order given: the rows that matter most first, when
		// the machine is busy and each kernel waits for the lock.
		run = nil
		for _, name := range want {
			k, _ := Lookup(name)
			run = append(run, k)
		}
	}
	for _, k := range run {
		file := CacheFile(out, k.Name)
		if _, err := os.Stat(file); err == nil && os.Getenv(redoEnv) == "" {
			t.Logf("%s: kept from an earlier run (%s; %s=1 runs it again)", k.Name, file, redoEnv)
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			if k.Where != WhereArm64 { // which locks around its VM only, not its builds
				unlock := lock(t)
				defer unlock()
			}
			// arm64 under TCG runs several times slower than the
			// amd64 guests: its row is the fast form (load, coupled
			// transfer, unload), not the whole check.
			mode := "full"
			if k.Where == WhereArm64 {
				mode = "fast"
			}
			runKernel(t, k, mode, bin, cctest, file)
		})
	}
	var results []Result
	for _, k := range Kernels {
		if r, err := Read(CacheFile(out, k.Name)); err == nil {
			results = append(results, r)
		}
	}
	if doc := os.Getenv(docsEnv); doc != "" {
		writeDocs(t, doc, results)
	}
}

// lock holds the lock file MPTCP_CC_MATRIX_LOCK names, if any, until the
// returned function is called: one kernel at a time against the other
// tests that move traffic on this machine, not the whole matrix.
func lock(t *testing.T) func() {
	file := os.Getenv(lockEnv)
	if file == "" {
		return func() {}
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if w := time.Since(start); w > time.Second {
		t.Logf("waited %v for %s", w.Round(time.Second), file)
	}
	return func() { f.Close() }
}

// buildCCTest builds pkg/cc's test binary for the differential replay.
func buildCCTest(t *testing.T) string {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "cc.test")
	if out, err := exec.Command("go", "test", "-c", "-o", bin, "../../pkg/cc").CombinedOutput(); err != nil {
		t.Fatalf("building pkg/cc's tests: %v\n%s", err, out)
	}
	return bin
}

// runKernel runs the check on k in mode and stores its result in file. A
// VM that did not give a result is recorded as a failed row.
func runKernel(t *testing.T, k Kernel, mode, bin, cctest, file string) {
	os.Remove(file)
	env := []string{guestOutEnv + "=" + file, guestBinEnv + "=" + bin, guestCCEnv + "=" + cctest, guestModeEnv + "=" + mode, guestNameEnv + "=" + k.Name}
	writable := []string{filepath.Dir(file), filepath.Dir(bin)}
	if cctest != "" {
		writable = append(writable, filepath.Dir(cctest))
	}
	var took time.Duration
	t.Cleanup(func() {
		// Also when the VM's run failed: a row records what happened.
		r, err := Read(file)
		if err != nil {
			r = Result{Kernel: k.Name, Mode: mode, Date: time.Now().UTC().Format("2006-01-02")}
			r.Add("run", Fail, "no result from the kernel: "+err.Error())
		}
		if took > 0 {
			r.Boot = (took - time.Duration(r.Seconds*float64(time.Second))).Seconds()
		}
		if err := Write(file, r); err != nil {
			t.Error(err)
		}
		t.Logf("%s (%s): %.0f s of checks, %.0f s to boot and power off; passed %v", k.Name, r.Release, r.Seconds, r.Boot, r.Passed())
	})
	start := time.Now()
	switch k.Where {
	case WhereHost:
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "-test.run", "^TestGuestMatrix$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		t.Logf("on the host:\n%s", out)
		if err != nil {
			t.Errorf("the check failed on the host: %v", err)
		}
		return
	case WhereDebian:
		vmtest.Kernel(t)
		t.Setenv(vmtest.KernelImageEnv, vmtest.DebianKernel(t, k.Debian))
	case WhereTest:
		vmtest.Kernel(t)
		t.Setenv(vmtest.KernelImageEnv, "")
	case WhereArm64:
		runArm64(t, k, mode, file)
		return
	}
	timeout := 12 * time.Minute
	if mode == "fast" {
		timeout = 4 * time.Minute
	}
	defer func() { took = time.Since(start) }()
	vmtest.RunTestsWith(t, "^TestGuestMatrix$", timeout, vmtest.TestOptions{Env: env, Writable: writable})
}

// writeDocs splices the table into doc and writes the results as JSON
// beside it (doc's name with -matrix.json).
func writeDocs(t *testing.T, doc string, results []Result) {
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	body := Markdown(results) + "\nWhat each check saw:\n" + Details(results)
	s, err := Splice(string(b), body)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	js := strings.TrimSuffix(doc, ".md") + "-matrix.json"
	if err := Write(js, results); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote the table into %s and the results into %s", doc, js)
}
