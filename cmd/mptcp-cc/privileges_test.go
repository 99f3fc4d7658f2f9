package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

// What `load` and `policy attach` pin is root's alone (directories 0700,
// pins 0600), even under umask 000; an unprivileged user reading them gets
// "needs root"; the metrics listener refuses a non-loopback address
// unless --web.allow-remote is given.
func TestPinsRootOnly(t *testing.T) {
	root := testkernel.PinRoot(t)
	bpffs := filepath.Dir(root)
	proot := filepath.Join(bpffs, "policy")
	bin := testenv.Binary(t, ".")
	setpriv := testenv.RequireTool(t, "setpriv", "util-linux")
	name := testenv.Unique("t_priv_")
	testkernel.UnloadAtCleanup(t, root, name)
	cg := testkernel.Cgroup(t, "")
	t.Cleanup(func() { _ = policy.Detach(cg, proot) })

	// umask 000: the modes must come from the code, not the caller's umask.
	asRoot := func(args ...string) {
		t.Helper()
		cmd := exec.Command("sh", append([]string{"-c", `umask 000; exec "$@"`, "sh", bin}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("mptcp-cc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	asRoot("load", "--algo", "lia", "--name", name, "--bpffs", root)
	asRoot("policy", "attach", "--cgroup", cg, "--algo", "reno", "--bpffs", proot)

	pins := testkernel.Pins(t, bpffs)
	if len(pins) < 6 {
		t.Fatalf("pinned: %v; want the CC's and the policy's pins", pins)
	}
	for _, p := range pins {
		st, err := os.Stat(filepath.Join(bpffs, p))
		if err != nil {
			t.Fatal(err)
		}
		uid := st.Sys().(*syscall.Stat_t).Uid
		if st.Mode().Perm()&0o077 != 0 || uid != 0 {
			t.Errorf("%s: mode %v, owner %d; want root's alone", p, st.Mode(), uid)
		}
	}

	// Let others reach the bpffs mount, as they reach /sys/fs/bpf on a host
	// whose bpffs is world-searchable: the pins' own modes must stop them.
	for d := bpffs; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	nobody := func(args ...string) (string, int) {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"}, args...)...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	for _, args := range [][]string{
		{bin, "list", "--bpffs", root},
		{bin, "subflows", "--bpffs", root},
		{bin, "top", "--once", "--no-events", "--bpffs", root},
		{bin, "policy", "list", "--bpffs", proot},
	} {
		if out, code := nobody(args...); code != 1 || !strings.Contains(out, "needs root") {
			t.Errorf("unprivileged %s: exit %d, %q; want 1 and \"needs root\"", strings.Join(args[1:], " "), code, out)
		}
	}
	for _, p := range []string{filepath.Join(root, name, "subflows"), filepath.Join(root, name, "link")} {
		if out, code := nobody("cat", p); code == 0 || !strings.Contains(out, "Permission denied") {
			t.Errorf("unprivileged cat %s: exit %d, %q", p, code, out)
		}
	}
	if out, code := nobody(bin, "unload", "--name", name, "--bpffs", root); code != 1 || !strings.Contains(out, "needs root") {
		t.Errorf("unprivileged unload: exit %d, %q", code, out)
	}

	// The metrics listener: loopback only, unless allowed.
	check := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"serve", "--config", os.DevNull, "--config.check", "--bpffs", root}, args...)...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	for _, addr := range []string{"0.0.0.0:9464", "[::]:9464", ":9464", "192.0.2.1:9464"} {
		if out, code := check("--web.listen-address", addr); code != 1 || !strings.Contains(out, "--web.allow-remote") {
			t.Errorf("--web.listen-address %s: exit %d, %q; want it refused, naming --web.allow-remote", addr, code, out)
		}
		if out, code := check("--web.listen-address", addr, "--web.allow-remote"); code != 0 {
			t.Errorf("--web.listen-address %s --web.allow-remote: exit %d, %q", addr, code, out)
		}
	}
	for _, addr := range []string{"127.0.0.1:9464", "[::1]:9464", "127.0.0.2:0"} {
		if out, code := check("--web.listen-address", addr); code != 0 {
			t.Errorf("--web.listen-address %s (loopback): exit %d, %q", addr, code, out)
		}
	}
}
