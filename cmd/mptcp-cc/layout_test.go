// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The tree is split by what ships: pkg/ is what mptcp-cc (the binary and
// the package) is made of, lab/ the instruments and experiments around it.
// The product must not depend on the lab, or the split says nothing: no
// package under pkg/ (tests aside) and not mptcp-cc itself imports lab/.
func TestProductDoesNotImportLab(t *testing.T) {
	const module = "github.com/mptcp-cc/mptcp-cc/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".", "../../pkg/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	n := 0
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, module) {
			continue
		}
		n++
		if strings.HasPrefix(p, module+"lab/") {
			t.Errorf("the product depends on %s: pkg/ and cmd/mptcp-cc may not import lab/ (move what both need into pkg/)", p)
		}
	}
	if n < 10 {
		t.Fatalf("go list named %d packages of the module: the check saw too little", n)
	}
}
