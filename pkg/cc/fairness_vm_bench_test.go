// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
)

// fairnessVMDefault is the VM's matrix unless FAIRNESS_VM says otherwise:
// the controls that tell the kernel's subflows apart from plain flows (the
// one-subflow arm runs too), at a rate QEMU without KVM keeps up with, with
// the server's ACK decisions watched (the test kernel allows fentry).
// Run the host's bench with the same FAIRNESS to compare the two kernels
// at equal settings.
const fairnessVMDefault = "rtt=40 queue=1 subflows=2 cc=tcp,mptcp1,reno runs=3 rate=5 ackwatch=on"

// TestBenchFairnessInVM runs TestBenchFairness inside the shared test
// kernel's VM (a newer kernel than the host's, docs/kernel-faults.md
// section 3): does another kernel's MPTCP give one connection's subflows
// the share that plain flows get? FAIRNESS_VM picks the cells as FAIRNESS
// does (default fairnessVMDefault); the table goes to
// lab-results/fairness-vm/fairness.md (and .svg), headed by the guest's
// kernel release; for another kernel image (MPTCP_CC_VM_KIMG), under
// fairness-vm-VERSION (vmtest.ResultsDir).
func TestBenchFairnessInVM(t *testing.T) {
	testenv.Bench(t)
	testenv.RequireRoot(t)
	vmtest.Kernel(t)
	spec := os.Getenv("FAIRNESS_VM")
	if spec == "" {
		spec = fairnessVMDefault
	}
	m := parseMatrix(t, spec) // a bad spec fails here, before the VM boots
	out := vmtest.ResultsDir(t, "fairness-vm")
	// Each run is 23 s of transfer (8 s warm-up, 15 s measured) per arm,
	// the one-subflow arm included; QEMU's boot and each network's set-up
	// take the rest.
	arms := len(m.ccs) + 1
	cells := len(m.rtts) * len(m.queues) * len(m.subflows) * len(m.refs) * len(m.quickAcks)
	timeout := 10*time.Minute + time.Duration(cells*arms*m.runs)*40*time.Second
	vmtest.RunTestsWith(t, "^TestBenchFairness$", timeout, vmtest.TestOptions{
		Env:      []string{testenv.BenchEnv + "=1", "FAIRNESS=" + spec, "FAIRNESS_OUT=" + filepath.Join(out, "fairness.md")},
		Writable: []string{out},
	})
	table, err := os.ReadFile(filepath.Join(out, "fairness.md"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("in the VM (%s):\n%s", out, table)
}
