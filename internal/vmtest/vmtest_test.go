// SPDX-License-Identifier: Apache-2.0

package vmtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// The test kernel boots, runs a command and hands back its output and
// status; and `mptcp-cc version` there sees the BPF scheduler hook that
// this machine's kernel lacks (kernel.Probe reads it from BTF).
func TestVersionInVM(t *testing.T) {
	Kernel(t)
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(t.TempDir(), "mptcp-cc")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mptcp-cc")
	build.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	r := Run(t, bin+" version --json; exit 3", 180*time.Second)
	t.Logf("VM run took %v", r.Took.Round(time.Millisecond))
	if r.ExitCode != 3 {
		t.Fatalf("exit status %d from the guest, want the script's 3; output:\n%s", r.ExitCode, r.Output)
	}
	var v struct {
		Kernel struct {
			Release string `json:"release"`
			BTF     bool   `json:"btf"`
			CC      bool   `json:"tcp_congestion_ops_struct_ops"`
			Sched   bool   `json:"mptcp_sched_struct_ops"`
		} `json:"kernel"`
	}
	if err := json.Unmarshal([]byte(r.Output), &v); err != nil {
		t.Fatalf("%v: %s", err, r.Output)
	}
	k := v.Kernel
	if !k.BTF || !k.CC || !k.Sched {
		t.Errorf("in the test kernel (%s) version says BTF %v, CC struct_ops %v, scheduler hook %v; want all three", k.Release, k.BTF, k.CC, k.Sched)
	}
}
