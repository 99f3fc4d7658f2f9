// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// devPaths are places that exist only in the development workspace (the
// test kernel with the BPF scheduler hook and the notes beside the
// repository): no message, help or operator's doc may send a user there.
var devPaths = []string{"shared/kernels", "../shared", "mptcp-bpf-sched"}

// No string in the Go code that ships (cmd, pkg, lab, internal; not tests, nor
// internal/vmtest, which is test equipment) and no operator's doc
// (README.md, docs/*.md) names a development path.
func TestNoDevelopmentPaths(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	found := func(where, s string) {
		for _, p := range devPaths {
			if strings.Contains(s, p) {
				t.Errorf("%s names the development path %q: say \"a kernel built from mptcp_net-next's export branch\" and point to docs/schedulers.md", where, p)
			}
		}
	}
	files := 0
	for _, top := range []string{"cmd", "pkg", "lab", "internal"} {
		err := filepath.WalkDir(filepath.Join(repo, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path == filepath.Join(repo, "internal", "vmtest") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			files++
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					found(fset.Position(lit.Pos()).String(), lit.Value)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 100 {
		t.Fatalf("only %d Go files under cmd, pkg and internal: is %s the repository?", files, repo)
	}
	docs, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md under %s: %v", repo, err)
	}
	for _, doc := range append(docs, filepath.Join(repo, "README.md")) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			found(fmt.Sprintf("%s:%d", filepath.Base(doc), i+1), line)
		}
	}
}
