// SPDX-License-Identifier: Apache-2.0

package ssthresh_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/lab/bpfreno"
	"github.com/mptcp-cc/mptcp-cc/lab/ssthresh"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// vmEnv selects the ssthresh reproducer in a VM and sets how long its arms
// run (make repro-kernel-vm, make repro-kernel-debian). Not part of CI.
const vmEnv = "MPTCP_CC_REPRO_SSTHRESH_VM"

// TestSsthreshInVM boots the shared test kernel, or the image
// MPTCP_CC_VM_KIMG names, and runs the ssthresh reproducer there with the
// arms that tell the struct_ops path from the rest: our LIA, the kernel's
// Reno through BPF on MPTCP and on plain TCP, and the kernel's own Reno on
// both. Two things the host cannot give: another kernel build, and a
// kernel without lockdown, where cawatch's fentry on the undo loads too.
// The report goes to lab-results/ssthresh-vm (-IMAGE for another image,
// vmtest.RunReport).
func TestSsthreshInVM(t *testing.T) {
	env := os.Getenv(vmEnv)
	if env == "" {
		t.Skip("the ssthresh reproducer in a VM: set " + vmEnv + "=DURATION (make repro-kernel-vm)")
	}
	testenv.RequireRoot(t)
	d, err := time.ParseDuration(env)
	if err != nil || d < time.Second {
		t.Fatalf("%s=%q: want a duration of 1s or more, e.g. 5m", vmEnv, env)
	}
	vmtest.RunReport(t, "^TestGuestSsthresh$", d+10*time.Minute, "ssthresh-vm", vmEnv+"="+env)
}

func TestGuestSsthresh(t *testing.T) {
	vmtest.Guest(t)
	d, err := time.ParseDuration(os.Getenv(vmEnv))
	if err != nil {
		t.Fatal(err)
	}
	root := testkernel.PinRoot(t)
	lia := testkernel.Load(t, root, "lia", cc.Params{})
	reno, err := bpfreno.Register("t_breno" + testenv.Suffix())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reno.Close() })
	arms := []ssthresh.Arm{{Name: "lia", CC: lia}, {Name: "bpfreno", CC: reno.Name}, {Name: "bpfreno+tcp", CC: reno.Name, TCP: true},
		{Name: "reno", CC: "reno"}, {Name: "reno+tcp", CC: "reno", TCP: true}}
	prefix := testenv.Unique("sst")
	t.Cleanup(func() { topo.CleanPrefix(prefix) })
	rep, err := ssthresh.Run(context.Background(), ssthresh.Options{Prefix: prefix, Arms: arms, For: d, Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	vmtest.SaveReport(t, rep)
}
