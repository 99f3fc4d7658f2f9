// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The last detach removes the root while it holds the root's lock: an
// attach that was waiting for that lock must not go on in the removed
// directory but lock the root made again.
func TestLockRootRemovedWhileWaiting(t *testing.T) {
	root := filepath.Join(t.TempDir(), "policies")
	unlock, err := lockRoot(root, true)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		unlock2, err := lockRoot(root, true)
		if err == nil {
			// Held: the root is there and another lock must wait for it.
			_, err = os.Stat(root)
			unlock2()
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // the goroutine waits in flock on the old root
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the waiting lock: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting lock never returned")
	}
	// Without create, a root that is gone is nothing to lock.
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	unlock, err = lockRoot(root, false)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("lockRoot without create made %s: %v", root, err)
	}
}
