// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

func TestLoadListUnloadEach(t *testing.T) {
	root := testkernel.PinRoot(t)
	for _, a := range cc.Algorithms() {
		t.Run(a.Name, func(t *testing.T) {
			name := testenv.Unique("t_" + a.Name + "_")
			p := cc.Params{LISA: true, RSFTarget: 7 * time.Millisecond}
			if err := cc.Load(a, cc.Options{Name: name, PinRoot: root, Params: p}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cc.Unload(name, root) })
			if !cc.IsRegistered(name) {
				t.Fatalf("%s not in tcp_available_congestion_control after load", name)
			}
			list, err := cc.List(root)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].Name != name || list[0].Algo != a.Name || list[0].Params != p || !list[0].Registered {
				t.Fatalf("list = %+v, want %s (%s) with %+v", list, name, a.Name, p)
			}
			if err := cc.Unload(name, root); err != nil {
				t.Fatal(err)
			}
			if cc.IsRegistered(name) {
				t.Fatalf("%s still registered after unload", name)
			}
			if list, _ := cc.List(root); len(list) != 0 {
				t.Fatalf("list after unload = %+v", list)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	root := testkernel.PinRoot(t)
	lia, _ := cc.Lookup("lia")

	if _, err := cc.Lookup("cubic2"); err == nil || !strings.Contains(err.Error(), "olia") {
		t.Errorf("unknown algorithm: %v (want the list of known ones)", err)
	}

	name := testkernel.Load(t, root, "lia", cc.Params{})
	err := cc.Load(lia, cc.Options{Name: name, PinRoot: root})
	if !errors.Is(err, cc.ErrAlreadyLoaded) {
		t.Errorf("second load: %v, want ErrAlreadyLoaded", err)
	}

	// A name another congestion control holds: refused, nothing left behind.
	err = cc.Load(lia, cc.Options{Name: "reno", PinRoot: root})
	if !errors.Is(err, cc.ErrNameRegistered) {
		t.Errorf("load as reno: %v, want ErrNameRegistered", err)
	}
	if _, err := os.Stat(filepath.Join(root, "reno")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused load left %s behind", filepath.Join(root, "reno"))
	}

	for _, bad := range []string{"this_name_is_too_long", "Bad Name"} {
		if err := cc.Load(lia, cc.Options{Name: bad, PinRoot: root}); err == nil {
			_ = cc.Unload(bad, root)
			t.Errorf("name %q accepted", bad)
		}
	}

	if err := cc.Unload("t_nothing_here", root); !errors.Is(err, cc.ErrNotLoaded) {
		t.Errorf("unload of nothing: %v, want ErrNotLoaded", err)
	}
}

// A load that fails after it created the pin root removes it (an empty
// /sys/fs/bpf/mptcp-cc was left behind on kernels that refused the map).
// Here the root is not on bpffs, so the pins fail after the registration,
// which is undone too.
func TestFailedLoadLeavesNoPinRoot(t *testing.T) {
	testenv.RequireRoot(t)
	lia, _ := cc.Lookup("lia")
	root := filepath.Join(t.TempDir(), "pins")
	name := testenv.Unique("t_noroot_")
	err := cc.Load(lia, cc.Options{Name: name, PinRoot: root})
	if err == nil {
		_ = cc.Unload(name, root)
		t.Fatal("a load pinned outside bpffs succeeded")
	}
	if _, serr := os.Stat(root); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("the failed load (%v) left its pin root %s behind", err, root)
	}
	if cc.IsRegistered(name) {
		t.Errorf("the failed load (%v) left %s registered", err, name)
	}
}

// MaxSubflowsTracked is the map size the objects are compiled with
// (MPCC_MAX_SUBFLOWS_TRACKED): the CLI's bound and default rest on it.
func TestMaxSubflowsTrackedMatchesObjects(t *testing.T) {
	for _, a := range cc.Algorithms() {
		spec, err := a.Spec()
		if err != nil {
			t.Fatal(err)
		}
		if got := spec.Maps["subflows"].MaxEntries; got != cc.MaxSubflowsTracked {
			t.Errorf("%s: the subflows map holds %d, cc.MaxSubflowsTracked says %d", a.Name, got, cc.MaxSubflowsTracked)
		}
	}
}
