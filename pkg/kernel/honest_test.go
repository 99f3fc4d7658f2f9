// SPDX-License-Identifier: Apache-2.0

package kernel_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pathsAllowed are the kernel paths pkg/ names outside pkg/kernel, and why
// none is a kernel file read that a fixture would need: the bpffs pin
// roots (where pins go, not what the kernel reports), and the calling
// thread's namespace handle (which namespace to return to after setns).
var pathsAllowed = []string{"/sys/fs/bpf", "/proc/thread-self/ns/net"}

// Nothing in pkg/ but pkg/kernel names a file under /proc or /sys, so
// every read of one goes through pkg/kernel and its settable root: a
// reader elsewhere would escape the fixtures. Nor does anything there
// move the root: only tests do (kerneltest.Root). A path inside prose (an
// error message naming /proc/self/mountinfo) is not a read and is not
// flagged: only a string that starts with the path is.
func TestOnlyKernelReadsKernelFiles(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "kernel" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "SetRoot" {
				t.Errorf("%s: SetRoot outside tests: the product reads the running kernel", fset.Position(sel.Pos()))
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !(strings.HasPrefix(s, "/proc/") || strings.HasPrefix(s, "/sys/")) {
				return true
			}
			for _, a := range pathsAllowed {
				if s == a || strings.HasPrefix(s, a+"/") {
					return true
				}
			}
			t.Errorf("%s: %q: read kernel files through pkg/kernel (Sysctl, Mounts, ...), which tests point at fixtures", fset.Position(lit.Pos()), s)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
