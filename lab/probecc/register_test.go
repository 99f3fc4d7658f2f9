// SPDX-License-Identifier: Apache-2.0

package probecc_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/lab/probecc"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// The other half of a 6.1 port: registering without a struct_ops link
// (Linux 6.4), as bpftool's `struct_ops register` did on 5.x. cilium/ebpf
// sets BPF_F_LINK on every map of a `.struct_ops.link` section, but it is
// the MapSpec's flag: cleared, the kernel registers the congestion control
// when cilium/ebpf writes the map's value at load, and unregisters it when
// the element is deleted; no link is made. Shown on this kernel, which
// takes both (a 6.1 kernel takes only this: TestOn61).
func TestRegisterWithoutLink(t *testing.T) {
	testenv.RequireRoot(t)
	spec, err := shippedSpec("lia")
	if err != nil {
		t.Fatal(err)
	}
	registerWithoutLink(t, spec)
}

// TestOn61 boots Debian 12's own kernel (6.1.0-57, fetched once by
// scripts/debian-kernel.sh) and, in it, loads LIA without a link from both
// builds. The shipped one is refused for want of bpf_rdonly_cast. The
// probe-read one gets past what a port changes: its struct_ops map is
// created without BPF_F_LINK (cilium/ebpf creates the maps before it loads
// the programs) and its kfuncs resolve; what stops it, as measured on
// 2026-11-29, is 6.1's verifier, in LIA's algo_increase (docs/kernels.md,
// "Debian 12's own 6.1"). The test holds that: any other failure fails
// it, and should the verifier accept the build, the CC must register and
// unregister. A VM boot under TCG takes about half a minute, so it runs
// only when asked: PROBECC_VM=1 (under the lab's network lock, as every
// VM run on the shared machine).
func TestOn61(t *testing.T) {
	if vmtest.InGuest() {
		t.Skip("the host side")
	}
	if os.Getenv("PROBECC_VM") != "1" {
		t.Skip("boots a VM (about half a minute): set PROBECC_VM=1")
	}
	t.Setenv(vmtest.KernelImageEnv, vmtest.DebianKernel(t, "6.1.0-57"))
	vmtest.RunTests(t, "^TestGuest61$", 3*time.Minute)
}

// TestGuest61 is TestOn61's side in the guest.
func TestGuest61(t *testing.T) {
	vmtest.Guest(t)
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	t.Logf("kernel %s", unix.ByteSliceToString(u.Release[:]))
	shipped, err := shippedSpec("lia")
	if err != nil {
		t.Fatal(err)
	}
	if _, coll, err := loadWithoutLink(shipped); err == nil || !strings.Contains(err.Error(), "bpf_rdonly_cast") {
		if coll != nil {
			coll.Close()
		}
		t.Errorf("the shipped build on this kernel: %v; want a refusal naming bpf_rdonly_cast", err)
	} else {
		t.Logf("the shipped build, refused as expected: %v", err)
	}
	b, err := fs.ReadFile(probecc.Objects, "lia_bpfel.o")
	if err != nil {
		t.Fatal(err)
	}
	probe, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	_, coll, err := loadWithoutLink(probe.Copy())
	var ve *ebpf.VerifierError
	switch {
	case err == nil:
		coll.Close()
		t.Log("the probe-read build loads here: registering it")
		registerWithoutLink(t, probe)
	case errors.As(err, &ve) && strings.Contains(err.Error(), "mpcc_cong_avoid"):
		t.Logf("the probe-read build: maps created without a link, kfuncs resolved; 6.1's verifier stops cong_avoid: %v\nthe end of its log:\n%s",
			err, strings.Join(ve.Log[max(0, len(ve.Log)-12):], "\n"))
	default:
		t.Fatalf("the probe-read build on this kernel: %v; want it loaded, or refused by the verifier in cong_avoid", err)
	}
}

func shippedSpec(algo string) (*ebpf.CollectionSpec, error) {
	a, err := cc.Lookup(algo)
	if err != nil {
		return nil, err
	}
	return a.Spec()
}

// loadWithoutLink names spec's congestion control uniquely, clears
// BPF_F_LINK from its struct_ops map and loads it: the kernel registers it
// as the map's value is written. It returns the name and the map.
func loadWithoutLink(spec *ebpf.CollectionSpec) (string, *ebpf.Collection, error) {
	name := testenv.Unique("nolink_")
	opsMap, err := structops.SetName(spec, name)
	if err != nil {
		return "", nil, err
	}
	ms := spec.Maps[opsMap]
	if ms.Flags&unix.BPF_F_LINK == 0 {
		return "", nil, fmt.Errorf("cilium/ebpf no longer sets BPF_F_LINK on %s (flags %#x): nothing to clear", opsMap, ms.Flags)
	}
	ms.Flags &^= unix.BPF_F_LINK
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return "", nil, err
	}
	return name, coll, nil
}

// registerWithoutLink loads spec without a link and checks that it is
// registered, then that deleting the struct_ops element unregisters it.
func registerWithoutLink(t *testing.T, spec *ebpf.CollectionSpec) {
	t.Helper()
	var opsMap string
	for n, m := range spec.Maps {
		if m.Type == ebpf.StructOpsMap {
			opsMap = n
		}
	}
	name, coll, err := loadWithoutLink(spec)
	if err != nil {
		t.Fatalf("loading with the struct_ops map not a link's: %v", err)
	}
	defer coll.Close()
	ops := coll.Maps[opsMap]
	// Closing the map does not unregister a registration without a link:
	// delete the element whatever happens below.
	t.Cleanup(func() {
		if cc.IsRegistered(name) {
			_ = ops.Delete(uint32(0))
		}
	})
	if !cc.IsRegistered(name) {
		t.Fatalf("%s is not registered after the struct_ops map was written", name)
	}
	if err := ops.Delete(uint32(0)); err != nil {
		t.Fatalf("deleting the struct_ops element of %s: %v", name, err)
	}
	if !structops.WaitUnregistered(func() bool { return cc.IsRegistered(name) }) {
		t.Fatalf("%s is still registered 5 s after its struct_ops element was deleted", name)
	}
	t.Logf("%s registered by the map update, unregistered by the element's deletion", name)
}
