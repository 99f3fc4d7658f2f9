// SPDX-License-Identifier: Apache-2.0

// spdx checks that every source file of the repository starts with the
// SPDX-License-Identifier line of its license (LICENSE says which applies
// where: bpf/ is "GPL-2.0-only OR BSD-2-Clause", the rest Apache-2.0), and
// with -fix adds or corrects the lines. It is idempotent, so it can be
// re-run after any merge brings new files.
//
//	go run ./scripts/spdx        # names each file without its line; exit 1 if any
//	go run ./scripts/spdx -fix   # adds or corrects them in place
//
// Only the files git tracks are read (git ls-files), so generated and
// ignored files (vmlinux.h, *_bpfel.go) are never touched: a new file is
// checked once it is added. rules.go says which kinds of file are source.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	fix := flag.Bool("fix", false, "add or correct the SPDX lines instead of only reporting them")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/spdx [-fix]")
		flag.PrintDefaults()
	}
	flag.Parse()
	root, err := repoRoot(".")
	if err != nil {
		fmt.Fprintf(os.Stderr, "spdx: %v\n", err)
		os.Exit(2)
	}
	files, err := trackedFiles(root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "spdx: %v\n", err)
		os.Exit(2)
	}
	problems, fixed, err := run(root, files, *fix)
	if err != nil {
		fmt.Fprintf(os.Stderr, "spdx: %v\n", err)
		os.Exit(2)
	}
	for _, f := range fixed {
		fmt.Printf("fixed %s\n", f)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		if !*fix {
			fmt.Fprintf(os.Stderr, "spdx: %d file(s) without their SPDX line; `go run ./scripts/spdx -fix` adds them\n", len(problems))
		}
		os.Exit(1)
	}
}

// errNoWorkTree: dir is in no git work tree (an unpacked source archive),
// so there are no tracked files to read.
var errNoWorkTree = errors.New("not in a git work tree: the check reads the files git tracks")

// repoRoot is the top of the git work tree that holds dir.
func repoRoot(dir string) (string, error) {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && strings.Contains(string(ee.Stderr), "not a git repository"):
		return "", fmt.Errorf("%s: %w", dir, errNoWorkTree)
	case err != nil:
		return "", fmt.Errorf("git rev-parse --show-toplevel in %s: %v %s", dir, err, ee.Stderr)
	}
	return strings.TrimSpace(string(out)), nil
}

// trackedFiles lists the files git tracks under root, relative to it.
func trackedFiles(root string) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %v", root, err)
	}
	return strings.FieldsFunc(string(out), func(r rune) bool { return r == 0 }), nil
}

// run checks (or, with fix, fixes) each file, given relative to root. It
// returns one "path: problem" line per file still wrong, and the files it
// rewrote.
func run(root string, files []string, fix bool) (problems, fixed []string, err error) {
	for _, rel := range files {
		file := filepath.Join(root, rel)
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			return nil, nil, err
		}
		if fix {
			out, err := withHeader(rel, data)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", rel, err))
				continue
			}
			if string(out) != string(data) {
				// WriteFile on an existing file keeps its mode (scripts stay executable).
				if err := os.WriteFile(file, out, 0); err != nil {
					return nil, nil, err
				}
				fixed = append(fixed, rel)
			}
			data = out
		}
		p, err := check(rel, data)
		if err != nil {
			p = err.Error()
		}
		if p != "" {
			problems = append(problems, fmt.Sprintf("%s: %s", rel, p))
		}
	}
	return problems, fixed, nil
}

// headerIndex is the line the SPDX line belongs on: the first one that
// need not stay above it.
func headerIndex(s style, lines []string) int {
	i := 0
	for i < len(lines) && s.skip(lines[i]) {
		i++
	}
	return i
}

// isSPDXLine reports whether l is an SPDX line, whatever its comment
// syntax or license.
func isSPDXLine(l string) bool {
	return strings.HasPrefix(strings.TrimLeft(l, "/*# "), tag)
}

// check returns what is wrong with a file's SPDX line, or "" when it is
// right or the file needs none.
func check(rel string, data []byte) (string, error) {
	s, ok, err := classify(rel, data)
	if err != nil || !ok {
		return "", err
	}
	lines := strings.Split(string(data), "\n")
	i := headerIndex(s, lines)
	want := s.line(license(rel))
	switch {
	case i >= len(lines) || !isSPDXLine(lines[i]):
		return fmt.Sprintf("no SPDX line: line %d must be %q", i+1, want), nil
	case lines[i] != want:
		return fmt.Sprintf("line %d is %q, must be %q", i+1, lines[i], want), nil
	case s.blankAfter && i+1 < len(lines) && lines[i+1] != "":
		return fmt.Sprintf("line %d must be blank, or the SPDX line joins the package's doc comment", i+2), nil
	}
	return "", nil
}

// withHeader returns the file with its SPDX line added or corrected; a file
// that needs none, or is already right, comes back unchanged.
func withHeader(rel string, data []byte) ([]byte, error) {
	s, ok, err := classify(rel, data)
	if err != nil || !ok {
		return data, err
	}
	lines := strings.Split(string(data), "\n")
	i := headerIndex(s, lines)
	want := s.line(license(rel))
	if i < len(lines) && isSPDXLine(lines[i]) {
		lines[i] = want
	} else {
		lines = slices.Insert(lines, i, want)
	}
	if s.blankAfter && i+1 < len(lines) && lines[i+1] != "" {
		lines = slices.Insert(lines, i+1, "")
	}
	return []byte(strings.Join(lines, "\n")), nil
}
