// SPDX-License-Identifier: Apache-2.0

package vmtest

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The reproducers (make repro-kernel-vm, make repro-kernel-debian) run a
// guest test that writes a report, which the host-side test then shows.
// The report lands in ResultsDir.

// reportEnv passes the report's directory to the guest.
const reportEnv = "MPTCP_CC_REPRO_OUT"

// ResultsDir is lab-results/NAME in the repository, or NAME-VERSION when
// KernelImageEnv boots another kernel (VERSION from the image's path), so
// that each kernel's results stay apart.
func ResultsDir(t testing.TB, name string) string {
	t.Helper()
	if k := os.Getenv(KernelImageEnv); k != "" {
		// boot/vmlinuz-VERSION, or lib/modules/VERSION/vmlinuz (Debian
		// from 7.2 on).
		v := strings.TrimPrefix(filepath.Base(k), "vmlinuz-")
		if v == "vmlinuz" {
			v = filepath.Base(filepath.Dir(k))
		}
		name += "-" + v
	}
	_, file, _, _ := runtime.Caller(0)
	// internal/vmtest -> the repository.
	out, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "lab-results", name))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RunReport boots the VM, runs the guest tests matching pattern (which
// call SaveReport) with env set, and logs the report they saved in
// ResultsDir(name).
func RunReport(t *testing.T, pattern string, timeout time.Duration, name string, env ...string) {
	t.Helper()
	out := ResultsDir(t, name)
	RunTestsWith(t, pattern, timeout, TestOptions{Env: append(env, reportEnv+"="+out), Writable: []string{out}})
	text, err := os.ReadFile(filepath.Join(out, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report (%s):\n%s", out, text)
}

// SaveReport writes rep, in the guest, as report.txt (its WriteText) and
// report.json into the directory RunReport gave.
func SaveReport(t testing.TB, rep interface{ WriteText(io.Writer) }) {
	t.Helper()
	out := os.Getenv(reportEnv)
	if out == "" {
		t.Fatalf("%s is not set: the guest test runs under RunReport", reportEnv)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "report.txt"), text.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "report.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
}
