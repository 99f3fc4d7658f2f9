// SPDX-License-Identifier: Apache-2.0

package integrity_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/lab/integrity"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// vmEnv selects the reproducer in the shared test kernel's VM and sets its
// connections per arm (make repro-kernel-vm). It is not part of CI: under
// QEMU without KVM a few thousand connections take many minutes.
const vmEnv = "MPTCP_CC_REPRO_VM"

// TestIntegrityInVM boots the shared test kernel (a newer kernel than the
// host's), or the image MPTCP_CC_VM_KIMG names, and runs the wrong-bytes
// reproducer there: kernel cubic, our LIA and cubic with DSS checksums.
// The report goes to lab-results/integrity-vm (-IMAGE for another image,
// vmtest.RunReport).
func TestIntegrityInVM(t *testing.T) {
	conns := os.Getenv(vmEnv)
	if conns == "" {
		t.Skip("the reproducer in the test kernel's VM: set " + vmEnv + "=CONNECTIONS (make repro-kernel-vm)")
	}
	testenv.RequireRoot(t)
	n, err := strconv.Atoi(conns)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number of connections per arm", vmEnv, conns)
	}
	// Three arms at no fewer than 20 connections a second under TCG, and
	// room to boot.
	timeout := 10*time.Minute + time.Duration(3*n)*time.Second/20
	vmtest.RunReport(t, "^TestGuestIntegrity$", timeout, "integrity-vm", vmEnv+"="+conns)
}

func TestGuestIntegrity(t *testing.T) {
	vmtest.Guest(t)
	n, err := strconv.Atoi(os.Getenv(vmEnv))
	if err != nil {
		t.Fatal(err)
	}
	root := testkernel.PinRoot(t)
	lia := testkernel.Load(t, root, "lia", cc.Params{})
	prefix := testenv.Unique("mpcc-")
	t.Cleanup(func() { topo.CleanPrefix(prefix) })
	rep, err := integrity.Run(context.Background(), integrity.Options{
		Prefix: prefix,
		Arms: []integrity.Arm{{Name: "cubic", CC: "cubic"}, {Name: "lia", CC: lia},
			{Name: "cubic+csum", CC: "cubic", Checksum: true}},
		Conns: n, Size: 256 << 10, Progress: os.Stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	vmtest.SaveReport(t, rep)
	for _, a := range rep.Arms {
		if a.Failed > 0 || a.Conns != n {
			t.Errorf("%s: %d checked, %d failed of %d: %v", a.Name, a.Conns, a.Failed, n, a.Errors)
		}
	}
}
