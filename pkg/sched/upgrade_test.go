// SPDX-License-Identifier: Apache-2.0

package sched_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

// What an upgrade refuses before it touches the kernel: a name that
// cannot be a scheduler's, and one that nothing is pinned as.
func TestUpgradeRefuses(t *testing.T) {
	testenv.RequireRoot(t)
	root := t.TempDir()
	if _, err := sched.Upgrade("a/b", root, false); err == nil || !strings.Contains(err.Error(), "use only a-z") {
		t.Errorf("upgrading a/b: %v, want the name refused", err)
	}
	name := testenv.Unique("t_none_")
	_, err := sched.Upgrade(name, root, false)
	if !errors.Is(err, sched.ErrNotLoaded) || !strings.Contains(err.Error(), "mptcp-cc sched list") {
		t.Errorf("upgrading %s, not loaded: %v, want ErrNotLoaded pointing to `mptcp-cc sched list`", name, err)
	}
}
