// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"testing"

	"github.com/mptcp-cc/mptcp-cc/lab/topo"
)

// A run id becomes a path under PinBase and StateDir that CleanRun removes
// with RemoveAll: only what NewRunID makes may pass.
func TestRunIDCheck(t *testing.T) {
	for _, id := range []RunID{"", ".", "..", "../x", "a/b", "ABCDEF", "12 34", "0123456789abcdef0123456789abcdef0"} {
		if err := id.Check(); err == nil {
			t.Errorf("run id %q accepted", id)
		}
		if _, err := CleanRun(id); err == nil {
			t.Errorf("CleanRun(%q) went ahead", id)
		}
	}
	for range 3 {
		if id := RunID(topo.Suffix()); id.Check() != nil {
			t.Errorf("a fresh id %q is refused", id)
		}
	}
}
