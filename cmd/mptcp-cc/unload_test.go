// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// load says how to use the CC, the per-cgroup policy first and the
// host-wide default last, with what the default does to plain TCP;
// --allow lets another namespace make it its default; unload refuses
// while a namespace's default names it, and --force unloads saying what
// it leaves.
func TestLoadAllowUnloadInUse(t *testing.T) {
	root := testkernel.PinRoot(t)
	bin := testenv.Binary(t, ".")
	name := testenv.Unique("t_use_")
	testkernel.UnloadAtCleanup(t, root, name)
	ns := testenv.Namespace(t, "mpcc-use")
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append(args, "--bpffs", root)...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}

	out, code := run("load", "--algo", "olia", "--name", name)
	policy, sysctl := strings.Index(out, "policy attach"), strings.Index(out, "sysctl net.ipv4.tcp_congestion_control")
	if code != 0 || policy < 0 || sysctl < policy || !strings.Contains(out, "plain TCP sockets get it too") {
		t.Fatalf("load: exit %d:\n%s\nwant the policy first, the host-wide default last with its effect on plain TCP", code, out)
	}
	// Not allowed: the kernel refuses it as another namespace's default.
	if err := netns.Exec(ns, "sysctl", "-q", "-w", "net.ipv4.tcp_congestion_control="+name); err == nil {
		t.Fatalf("namespace %s took %s as its default without --allow", ns, name)
	}
	if out, code := run("unload", "--name", name); code != 0 {
		t.Fatalf("unload of an unused CC: exit %d: %s", code, out)
	}
	if out, code := run("load", "--algo", "olia", "--name", name, "--allow"); code != 0 {
		t.Fatalf("load --allow: exit %d: %s", code, out)
	}
	if err := netns.Exec(ns, "sysctl", "-q", "-w", "net.ipv4.tcp_congestion_control="+name); err != nil {
		t.Fatalf("after load --allow, namespace %s cannot take %s as its default: %v", ns, name, err)
	}
	out, code = run("unload", "--name", name)
	if code != 1 || !strings.Contains(out, "is in use") || !strings.Contains(out, "netns "+ns) || !strings.Contains(out, "--force") {
		t.Errorf("unload while namespace %s's default: exit %d:\n%s", ns, code, out)
	}
	if !cc.IsRegistered(name) {
		t.Fatalf("a refused unload unregistered %s", name)
	}
	out, code = run("unload", "--name", name, "--force")
	if code != 0 || !strings.Contains(out, "left behind (--force)") || !strings.Contains(out, "netns "+ns) {
		t.Errorf("unload --force: exit %d:\n%s", code, out)
	}
}
