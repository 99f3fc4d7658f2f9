// SPDX-License-Identifier: Apache-2.0

// Package matrix is the kernel-support matrix (issue 27): the kernels the
// project is checked on, the result of the end-to-end check on each, and
// the table docs/kernels.md shows. The check itself runs the project's own
// binary inside each kernel (this package's TestGuestMatrix, booted by
// TestMatrix under `make matrix`, and by TestMatrixFast in `make test`).
package matrix

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Where a kernel runs.
const (
	WhereDebian = "debian" // one of Debian's packages, booted under QEMU (TCG) with virtme-ng
	WhereTest   = "test"   // the shared test kernel (internal/vmtest), booted the same way
	WhereHost   = "host"   // the kernel this machine runs: no VM
	WhereArm64  = "arm64"  // one of Debian's arm64 packages, booted under qemu-system-aarch64 (TCG) from an initramfs
)

// Kernel is one row of the matrix.
type Kernel struct {
	Name   string // the row's name, also the cache file's: "debian-6.12"
	Where  string // WhereDebian, WhereTest or WhereHost
	Debian string // the Debian version (linux-image-VERSION-amd64) for WhereDebian
	Label  string // what the docs call it
}

// Kernels are the matrix's rows, in the docs' order. The Debian versions
// are what the archive served on 2026-11-28 (scripts/debian-kernel.sh
// lists what it has when one has gone): bookworm's own 6.1, the 6.12 of
// bookworm-security/backports, the newest 7.x (trixie-backports).
var Kernels = []Kernel{
	{Name: "debian-6.1", Where: WhereDebian, Debian: "6.1.0-57", Label: "Debian 12's own (bookworm)"},
	{Name: "debian-6.12", Where: WhereDebian, Debian: "6.12.117+deb12", Label: "Debian 12 bookworm-backports/security"},
	{Name: "debian-7.3", Where: WhereDebian, Debian: "7.3.4+deb13", Label: "Debian 13 trixie-backports (newest 7.x)"},
	{Name: "host", Where: WhereHost, Label: "this development host"},
	{Name: "test-kernel", Where: WhereTest, Label: "the shared test kernel (mptcp_net-next, scheduler hook)"},
	{Name: "debian-6.12-arm64", Where: WhereArm64, Debian: "6.12.117+deb12", Label: "Debian 12 bookworm-backports/security, arm64 (routers)"},
}

// Lookup returns the kernel named name.
func Lookup(name string) (Kernel, error) {
	var names []string
	for _, k := range Kernels {
		if k.Name == name {
			return k, nil
		}
		names = append(names, k.Name)
	}
	return Kernel{}, fmt.Errorf("no kernel %q in the matrix: %s", name, strings.Join(names, ", "))
}

// Step statuses.
const (
	Pass    = "pass"    // did what it should
	Refused = "refused" // the kernel lacks a feature and the command refused cleanly, as the preflight said
	Fail    = "fail"
	Skip    = "skip" // not run (the mode, or a missing tool), Detail says why
)

// Step is one check in one kernel.
type Step struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Feature is the preflight's verdict on one feature, as `version --json`
// gives it.
type Feature struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Since string `json:"since"`
}

// Result is one kernel's run.
type Result struct {
	Kernel   string    `json:"kernel"`  // Kernel.Name
	Release  string    `json:"release"` // uname -r in the kernel
	Arch     string    `json:"arch"`
	Date     string    `json:"date"`                   // UTC, YYYY-MM-DD
	Mode     string    `json:"mode"`                   // "full" or "fast"
	Seconds  float64   `json:"seconds"`                // the check, in the kernel
	Boot     float64   `json:"boot_seconds,omitempty"` // the VM's boot and power-off around it
	Features []Feature `json:"features"`
	Steps    []Step    `json:"steps"`
}

// Passed reports whether no step failed.
func (r Result) Passed() bool {
	for _, s := range r.Steps {
		if s.Status == Fail {
			return false
		}
	}
	return len(r.Steps) > 0
}

// Add records a step.
func (r *Result) Add(name, status, detail string) {
	r.Steps = append(r.Steps, Step{Name: name, Status: status, Detail: detail})
}

// Write stores r as JSON in file.
func Write(file string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}

// Read loads a Result stored by Write.
func Read(file string) (Result, error) {
	var r Result
	b, err := os.ReadFile(file)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %v", file, err)
	}
	return r, nil
}

// CacheFile is where a kernel's result is kept between runs in dir.
func CacheFile(dir, kernel string) string { return filepath.Join(dir, kernel+".json") }

// featureColumns are the table's feature columns, in pkg/kernel's names.
var featureColumns = []struct{ name, head string }{
	{"struct_ops_link", "struct_ops links (6.4)"},
	{"bpf_rdonly_cast", "bpf_rdonly_cast (6.2)"},
	{"bpf_skc_to_mptcp_sock", "skc_to_mptcp_sock (5.19)"},
	{"iter_tcp", "iter/tcp (5.9)"},
	{"mptcp_sched_struct_ops", "scheduler hook"},
}

// Markdown renders results as the docs' table: one row per kernel, the
// preflight's verdicts, then each step's status.
func Markdown(results []Result) string {
	var b strings.Builder
	b.WriteString("| kernel | release | arch | date | ")
	for _, c := range featureColumns {
		b.WriteString(c.head + " | ")
	}
	b.WriteString("checks | took |\n|---|---|---|---|")
	for range featureColumns {
		b.WriteString("---|")
	}
	b.WriteString("---|---|\n")
	for _, r := range results {
		label := r.Kernel
		if k, err := Lookup(r.Kernel); err == nil {
			label = k.Label
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | ", label, r.Release, r.Arch, r.Date)
		for _, c := range featureColumns {
			v := "?"
			for _, f := range r.Features {
				if f.Name == c.name {
					v = map[bool]string{true: "yes", false: "no"}[f.OK]
				}
			}
			b.WriteString(v + " | ")
		}
		var steps []string
		for _, s := range r.Steps {
			mark := map[string]string{Pass: "pass", Refused: "refused (clean)", Fail: "**FAIL**", Skip: "skipped"}[s.Status]
			steps = append(steps, fmt.Sprintf("%s: %s", s.Name, mark))
		}
		took := fmt.Sprintf("%.0f s", r.Seconds)
		if r.Boot > 0 {
			took += fmt.Sprintf(" + %.0f s boot", r.Boot)
		}
		fmt.Fprintf(&b, "%s (%s) | %s |\n", strings.Join(steps, "; "), r.Mode, took)
	}
	return b.String()
}

// Details renders each step's detail, kernel by kernel: what the table's
// cells stand on.
func Details(results []Result) string {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "\n**%s (%s, %s)**\n\n", r.Kernel, r.Release, r.Arch)
		for _, s := range r.Steps {
			d := strings.ReplaceAll(strings.TrimSpace(s.Detail), "\n", "; ")
			// A refusal's remedy is the same on every line: its first
			// clause says what matters (the JSON keeps it whole).
			if s.Status == Refused {
				if i := strings.Index(d, ": it lacks"); i > 0 {
					d = "it lacks" + d[i+len(": it lacks"):]
				}
				d, _, _ = strings.Cut(d, ". Remedy:")
			}
			fmt.Fprintf(&b, "- %s, %s: %s\n", s.Name, s.Status, d)
		}
	}
	return b.String()
}

// Markers delimit the part of a document the harness writes.
const (
	BeginMarker = "<!-- matrix:begin (written by `make matrix`, lab/matrix) -->"
	EndMarker   = "<!-- matrix:end -->"
)

// Splice replaces what lies between the markers in doc with body.
func Splice(doc, body string) (string, error) {
	i := strings.Index(doc, BeginMarker)
	j := strings.Index(doc, EndMarker)
	if i < 0 || j < i {
		return "", fmt.Errorf("the document lacks the markers %q ... %q: add them where the table goes", BeginMarker, EndMarker)
	}
	return doc[:i+len(BeginMarker)] + "\n" + body + "\n" + doc[j:], nil
}
