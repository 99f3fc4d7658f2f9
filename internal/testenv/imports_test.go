// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"os/exec"
	"strings"
	"testing"
)

// The base stays below every package of the module: of the module it may
// depend on pkg/netns only (which depends on nothing of it), so that the
// tests of any package can use it without an import cycle.
func TestNoProjectImports(t *testing.T) {
	const module = "github.com/mptcp-cc/mptcp-cc/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		switch {
		case !strings.HasPrefix(p, module):
		case p == module+"internal/testenv", p == module+"pkg/netns":
		default:
			t.Errorf("internal/testenv depends on %s; only pkg/netns of this module is allowed", p)
		}
	}
}
