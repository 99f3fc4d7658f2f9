// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
)

// The tree is split by what ships: pkg/ is what mptcp-cc (the binary and
// the package) is made of, lab/ the instruments and experiments around it.
// The product must not depend on the lab, or the split says nothing: no
// package under pkg/ (tests aside) and not mptcp-cc itself imports lab/.
func TestProductDoesNotImportLab(t *testing.T) {
	deps := testenv.ModuleDeps(t, ".", "../../pkg/...")
	for _, p := range deps {
		if strings.HasPrefix(p, "lab/") {
			t.Errorf("the product depends on %s: pkg/ and cmd/mptcp-cc may not import lab/ (move what both need into pkg/)", p)
		}
	}
	if len(deps) < 10 {
		t.Fatalf("go list named %d packages of the module: the check saw too little", len(deps))
	}
}
