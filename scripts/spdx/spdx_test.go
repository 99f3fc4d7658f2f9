// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoFiles returns the repository's top and the files git tracks there.
// Outside a git checkout (an unpacked source archive) there is nothing to
// walk, so the tests that need it skip; any other git failure fails them.
func repoFiles(t *testing.T) (root string, files []string) {
	t.Helper()
	root, err := repoRoot(".")
	if errors.Is(err, errNoWorkTree) {
		t.Skipf("%v (a source archive?)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	files, err = trackedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, files
}

// TestRepository is the check itself: every source file git tracks starts
// with the SPDX line of its license. `go run ./scripts/spdx -fix` fixes
// what it names.
func TestRepository(t *testing.T) {
	root, files := repoFiles(t)
	// The walk must reach both license regions, or it checks nothing.
	for _, f := range []string{"bpf/include/cc_skel.h", "scripts/spdx/main.go"} {
		if !slices.Contains(files, f) {
			t.Fatalf("git ls-files in %s does not list %s", root, f)
		}
	}
	problems, _, err := run(root, files, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.Log("`go run ./scripts/spdx -fix` adds or corrects these lines")
	}
}

// TestBPFLicenseString: every license section in bpf/ says what the SPDX
// lines there say, in the kernel's words. A program with another string
// either fails to load (not GPL-compatible) or claims less than the files.
func TestBPFLicenseString(t *testing.T) {
	root, files := repoFiles(t)
	def := regexp.MustCompile(`SEC\("license"\)\s*=\s*"([^"]*)"`)
	found := 0
	for _, rel := range files {
		if !strings.HasPrefix(rel, "bpf/") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range def.FindAllStringSubmatch(string(data), -1) {
			found++
			if m[1] != bpfLicenseString {
				t.Errorf("%s: license section %q, want %q (LICENSE)", rel, m[1], bpfLicenseString)
			}
		}
	}
	if found == 0 {
		t.Fatal(`no SEC("license") definition found under bpf/`)
	}
}

// fixInDir writes content to dir/rel with mode, runs the fixer there the
// way -fix does, and returns the result; a second run must change nothing.
func fixInDir(t *testing.T, dir, rel, content string, mode os.FileMode) string {
	t.Helper()
	file := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	problems, fixed, err := run(dir, []string{rel}, true)
	if err != nil || len(problems) > 0 || !slices.Equal(fixed, []string{rel}) {
		t.Fatalf("fix %s: fixed %v, problems %v, err %v", rel, fixed, problems, err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if problems, fixed, err := run(dir, []string{rel}, true); err != nil || len(problems) > 0 || len(fixed) > 0 {
		t.Errorf("second fix of %s: fixed %v, problems %v, err %v; it must be idempotent", rel, fixed, problems, err)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != mode {
		t.Errorf("%s: mode after fix %v (err %v), want %v", rel, st.Mode().Perm(), err, mode)
	}
	return string(got)
}

func TestFixGoBuildConstraint(t *testing.T) {
	dir := t.TempDir()
	const src = "//go:build ignore\n\n// Package x is documented.\npackage x\n"
	got := fixInDir(t, dir, "x.go", src, 0o644)
	want := "// SPDX-License-Identifier: Apache-2.0\n\n" + src
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	// The constraint still excludes the file: go/build reads it as Go does.
	pkg, err := build.ImportDir(dir, 0)
	var noGo *build.NoGoError
	if !errors.As(err, &noGo) || !slices.Equal(pkg.IgnoredGoFiles, []string{"x.go"}) {
		t.Errorf("after the fix, //go:build ignore no longer applies: ImportDir err %v, ignored %v", err, pkg.IgnoredGoFiles)
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "x.go"), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if doc := f.Doc.Text(); doc != "Package x is documented.\n" {
		t.Errorf("package doc comment %q; the SPDX line must not join it", doc)
	}
}

func TestFixGoDocComment(t *testing.T) {
	dir := t.TempDir()
	// A wrong license on line 1, glued to the doc comment: both corrected.
	got := fixInDir(t, dir, "x.go", "// SPDX-License-Identifier: MIT\n// Package x.\npackage x\n", 0o644)
	want := "// SPDX-License-Identifier: Apache-2.0\n\n// Package x.\npackage x\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "x.go"), nil, parser.ParseComments)
	if err != nil || f.Doc.Text() != "Package x.\n" {
		t.Errorf("package doc comment %q (err %v), want %q", f.Doc.Text(), err, "Package x.\n")
	}
}

func TestFixShebang(t *testing.T) {
	dir := t.TempDir()
	for _, rel := range []string{"scripts/x.sh", "deploy/debian/postinst"} {
		got := fixInDir(t, dir, rel, "#!/bin/sh\n# Does a thing.\nset -eu\n", 0o755)
		want := "#!/bin/sh\n# SPDX-License-Identifier: Apache-2.0\n# Does a thing.\nset -eu\n"
		if got != want {
			t.Errorf("%s: got:\n%s\nwant:\n%s", rel, got, want)
		}
	}
}

func TestFixBPF(t *testing.T) {
	dir := t.TempDir()
	got := fixInDir(t, dir, "bpf/include/x.h", "/* SPDX-License-Identifier: GPL-2.0 */\n/*\n * x.h: a header.\n */\n", 0o644)
	if want := "/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */\n/*\n * x.h: a header.\n */\n"; got != want {
		t.Errorf("header: got:\n%s\nwant:\n%s", got, want)
	}
	got = fixInDir(t, dir, "bpf/cc/x.bpf.c", "#include \"vmlinux.h\"\n", 0o644)
	if want := "// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause\n#include \"vmlinux.h\"\n"; got != want {
		t.Errorf("program: got:\n%s\nwant:\n%s", got, want)
	}
}

func TestFixDockerfileDirective(t *testing.T) {
	got := fixInDir(t, t.TempDir(), "Dockerfile", "# syntax=docker/dockerfile:1\n# The image.\nFROM scratch\n", 0o644)
	want := "# syntax=docker/dockerfile:1\n# SPDX-License-Identifier: Apache-2.0\n# The image.\nFROM scratch\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestCheckNames(t *testing.T) {
	for _, c := range []struct{ rel, content, want string }{
		{"pkg/x/x.go", "package x\n", `no SPDX line: line 1 must be "// SPDX-License-Identifier: Apache-2.0"`},
		{"pkg/x/x.go", "// SPDX-License-Identifier: Apache-2.0\n// Package x.\npackage x\n", "line 2 must be blank"},
		{"bpf/x.bpf.c", "// SPDX-License-Identifier: GPL-2.0\n", `line 1 is "// SPDX-License-Identifier: GPL-2.0", must be "// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause"`},
		{"deploy/x.yaml", "a: 1\n", `no SPDX line: line 1 must be "# SPDX-License-Identifier: Apache-2.0"`},
		{"pkg/x/x.go", "// SPDX-License-Identifier: Apache-2.0\n\npackage x\n", ""},
	} {
		got, err := check(c.rel, []byte(c.content))
		if err != nil || !strings.Contains(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("check(%s, %q) = %q, %v; want %q", c.rel, c.content, got, err, c.want)
		}
	}
}

// TestClassify pins the rule: code, scripts, build and deployment files
// carry the line; docs, data, fuzz corpora, results, generated and binary
// files do not; a kind no rule covers is an error.
func TestClassify(t *testing.T) {
	source := []string{
		"cmd/mptcp-cc/main.go", "bpf/cc/lia.bpf.c", "bpf/include/cc_skel.h", "scripts/demo.sh",
		"Makefile", "Dockerfile", "deploy/kubernetes/daemonset.yaml", "deploy/prometheus/alerts.rules.yml",
		"testdata/config/minimal.yaml", "testdata/scenarios/smoke.yaml", "deploy/mptcp-cc.service", "tools/x.py",
	}
	for _, rel := range source {
		if _, ok, err := classify(rel, []byte("x\n")); !ok || err != nil {
			t.Errorf("%s: needs an SPDX line, but classify says %v, %v", rel, ok, err)
		}
	}
	if _, ok, err := classify(".ci/run", []byte("#!/usr/bin/env bash\n")); !ok || err != nil {
		t.Errorf(".ci/run (a script without an extension): %v, %v", ok, err)
	}
	exempt := []string{
		"README.md", "docs/results/rsf.report.yaml", "docs/results/rsf/data/a/scenario.yaml",
		"docs/results/fairness/exp-episode.patch", "scripts/kernel-patches/x.patch", "docs/results/a/summary.csv",
		"pkg/daemon/testdata/fuzz/FuzzParseConfig/empty", "pkg/x/testdata/fuzz/FuzzX/seed.yaml",
		"bpf/include/vmlinux.h", "pkg/cc/lia_bpfel.go", "LICENSE", "LICENSES/Apache-2.0.txt",
		"go.mod", "go.sum", ".gitignore", ".dockerignore", "deploy/debian/control", "deploy/debian/copyright",
		"pkg/x/testdata/out.golden",
	}
	for _, rel := range exempt {
		if _, ok, err := classify(rel, []byte("x\n")); ok || err != nil {
			t.Errorf("%s: must carry no SPDX line, but classify says %v, %v", rel, ok, err)
		}
	}
	if _, ok, err := classify("mptcp-xfer", []byte("\x7fELF\x02\x01\x01\x00")); ok || err != nil {
		t.Errorf("a binary: classify says %v, %v; want exempt", ok, err)
	}
	if _, _, err := classify("config.toml", []byte("a = 1\n")); err == nil || !strings.Contains(err.Error(), "scripts/spdx/rules.go") {
		t.Errorf("a kind with no rule: err %v, want one naming scripts/spdx/rules.go", err)
	}
}
