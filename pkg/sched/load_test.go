// SPDX-License-Identifier: Apache-2.0

package sched_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// On a kernel without the scheduler hook (every released one, this host's)
// a load fails naming the hook, before it makes a pin root.
func TestLoadWithoutHook(t *testing.T) {
	testenv.RequireRoot(t)
	if sched.CheckHook() == nil {
		t.Skip("this kernel has the BPF scheduler hook (TestGuestFailedLoadLeavesNoRoot covers it)")
	}
	failedLoadLeavesNoRoot(t)
}

// On a kernel with the hook, pins on tmpfs fail after the load made its
// pin root: the root goes again, and so does the registration.
func TestGuestFailedLoadLeavesNoRoot(t *testing.T) {
	vmtest.Guest(t)
	failedLoadLeavesNoRoot(t)
}

func failedLoadLeavesNoRoot(t *testing.T) {
	a, err := sched.Lookup("minrtt")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "made")
	name := testenv.Unique("t_fail_")
	err = sched.Load(a, sched.Options{Name: name, PinRoot: root})
	t.Logf("load: %v", err)
	switch hook := sched.CheckHook(); {
	case err == nil:
		_ = sched.Unload(name, root)
		t.Fatal("a load with its pins on tmpfs succeeded")
	case hook != nil && !errors.Is(err, sched.ErrNoHook):
		t.Errorf("without the hook: %v, want ErrNoHook", err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed load left its pin root %s: %v", root, err)
	}
	if !structops.WaitUnregistered(func() bool { return sched.IsRegistered(name) }) {
		t.Errorf("%s is still registered after its load failed", name)
	}
}
