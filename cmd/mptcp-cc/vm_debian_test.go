// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
)

// debian61 is Debian 12's own kernel (linux-image-6.1.0-57-amd64-unsigned,
// 6.1.192); MPTCP_CC_DEBIAN61 names another when the archive moves on.
func debian61() string {
	if v := os.Getenv("MPTCP_CC_DEBIAN61"); v != "" {
		return v
	}
	return "6.1.0-57"
}

// On Debian 12's own kernel (6.1: struct_ops for TCP but no struct_ops
// links, no bpf_rdonly_cast), every command that loads BPF refuses before
// it touches anything (serve: before it binds or loads): exit 1, a message naming each missing feature with
// the Linux version that brings it and the remedy, and nothing under
// /sys/fs/bpf. `version` says the same, and `doctor` says the host is not
// ready, with the same remedy. About a minute and a half under
// TCG (docs/kernels.md).
func TestInVMDebian61Refuses(t *testing.T) {
	testenv.RequireRoot(t)
	vmtest.Kernel(t) // boot.sh, or skip
	t.Setenv(vmtest.KernelImageEnv, vmtest.DebianKernel(t, debian61()))
	bin := testenv.Binary(t, ".")
	cmds := [][]string{
		{"version"},
		{"load", "--algo", "olia"},
		{"policy", "attach", "--cgroup", "/sys/fs/cgroup", "--algo", "cubic"},
		{"set", "--token", "1234abcd", "--algo", "cubic"},
		{"serve", "--config", "CONFIG", "--events.disable"},
		{"doctor"},
	}
	// serve's configuration, in a directory the guest sees (its /tmp is
	// its own; quotes and escapes do not survive virtme-ng's command line)
	cfgDir := t.TempDir()
	cfg := filepath.Join(cfgDir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte("algorithms:\n  - algo: olia\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmds[4][2] = cfg
	// Short: virtme-ng passes the command on the guest kernel's command
	// line (2048 bytes on x86), and a longer one never ran.
	var script strings.Builder
	fmt.Fprintf(&script, "mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf; uname -r; B=%s; "+
		"r() { echo \"@@ $1\"; shift; $B \"$@\"; echo \"@@ rc=$?\"; echo \"@@ left: $(ls -A /sys/fs/bpf)\"; }; ", bin)
	for i, c := range cmds {
		fmt.Fprintf(&script, "r %d %s; ", i, strings.Join(c, " "))
	}
	start := time.Now()
	r := vmtest.Run(t, script.String(), 4*time.Minute, filepath.Dir(bin), cfgDir)
	t.Logf("booted %s and ran %d commands in %v:\n%s", debian61(), len(cmds), time.Since(start).Round(time.Second), r.Output)
	if r.ExitCode != 0 {
		t.Fatalf("the script failed in the VM: exit %d", r.ExitCode)
	}
	parts := regexp.MustCompile(`(?m)^@@ \d+$`).Split(r.Output, -1)
	if len(parts) != len(cmds)+1 || !strings.HasPrefix(strings.TrimSpace(parts[0]), "6.1.") {
		t.Fatalf("the guest's output is not %d commands on 6.1", len(cmds))
	}
	remedy := []string{"apt install -t bookworm-backports linux-image-amd64", "linux-generic-hwe-22.04"}
	for i, c := range cmds {
		out := parts[i+1]
		name := strings.Join(c, " ")
		wantRC := "@@ rc=1"
		want := append([]string{"bpf_rdonly_cast kfunc, which Linux 6.2 brings"}, remedy...)
		switch c[0] {
		case "version":
			wantRC = "@@ rc=0"
			want = append(want, "BPF struct_ops links (BPF_F_LINK)                no   (Linux 6.4;",
				"load: refused", "policy attach: refused", "set: refused")
		case "doctor":
			want = append(want, "fail  kernel", "NOT READY")
		case "load", "serve":
			want = append(want, "BPF struct_ops links (BPF_F_LINK), which Linux 6.4 brings", "Linux 6.4 or newer", "(`mptcp-cc "+c[0]+"`)")
		default:
			want = append(want, "Linux 6.2 or newer")
		}
		if !strings.Contains(out, wantRC) {
			t.Errorf("%s: want %s:\n%s", name, wantRC, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the output lacks %q:\n%s", name, w, out)
			}
		}
		if strings.Contains(out, "invalid argument") || strings.Contains(out, "not supported") {
			t.Errorf("%s: a raw kernel error reached the user:\n%s", name, out)
		}
		if !regexp.MustCompile(`(?m)^@@ left: $`).MatchString(out) {
			t.Errorf("%s left something in /sys/fs/bpf:\n%s", name, out)
		}
	}
}
