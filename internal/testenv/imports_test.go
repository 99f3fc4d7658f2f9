// SPDX-License-Identifier: Apache-2.0

package testenv

import "testing"

// The base stays below every package of the module: of the module it may
// depend on pkg/netns only (which depends on nothing of it), so that the
// tests of any package can use it without an import cycle.
func TestNoProjectImports(t *testing.T) {
	for _, p := range ModuleDeps(t, ".") {
		if p != "internal/testenv" && p != "pkg/netns" {
			t.Errorf("internal/testenv depends on %s; only pkg/netns of this module is allowed", p)
		}
	}
}
