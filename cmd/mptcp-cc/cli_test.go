package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// The tests run the real binary (testenv.Binary builds it once).
func TestMain(m *testing.M) { testenv.Main(m) }

// The CLI's contract on bad input: a message that names the problem and the
// fix, a non-zero exit, and nothing registered or pinned.
func TestCLIErrors(t *testing.T) {
	root := testkernel.PinRoot(t)
	bin := testenv.Binary(t, ".")
	name := testenv.Unique("t_cli_")
	mptcpcc := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append(args, "--bpffs", root)...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	t.Cleanup(func() { _ = cc.Unload(name, root) })

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"load", "--algo", "cubic2"}, "unknown algorithm \"cubic2\": choose one of balia, lia, olia, rsf"},
		{[]string{"load"}, "--algo is required"},
		{[]string{"load", "--algo", "lia", "--name", "reno"}, "already registered"},
		{[]string{"load", "--algo", "lia", "--name", "much_too_long_a_name"}, "1 to 15 characters"},
		{[]string{"unload", "--name", name}, "is not loaded"},
		{[]string{"load", "--algo", "lia", "--rsf-target", "-1s"}, "out of range"},
	}
	for _, c := range cases {
		out, code := mptcpcc(c.args...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("mptcp-cc %s: exit %d, output %q; want non-zero and %q", strings.Join(c.args, " "), code, out, c.want)
		}
	}

	if out, code := mptcpcc("load", "--algo", "lia", "--name", name); code != 0 {
		t.Fatalf("load: exit %d: %s", code, out)
	}
	if out, code := mptcpcc("load", "--algo", "lia", "--name", name); code == 0 || !strings.Contains(out, "already loaded") || !strings.Contains(out, "unload") {
		t.Errorf("second load: exit %d, %q", code, out)
	}
	if out, _ := mptcpcc("list"); !strings.Contains(out, name) || !strings.Contains(out, "registered") {
		t.Errorf("list does not show %s: %q", name, out)
	}

	// Without privileges: refused before anything is touched.
	if _, err := exec.LookPath("setpriv"); err == nil {
		cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin, "load", "--algo", "olia", "--bpffs", root)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), "needs root") {
			t.Errorf("unprivileged load: exit %d, %q", cmd.ProcessState.ExitCode(), out)
		}
		if cc.IsRegistered("mptcp_olia") && os.Getenv("CI") != "" {
			t.Errorf("an unprivileged load registered mptcp_olia")
		}
	} else {
		t.Log("setpriv not found: unprivileged case not checked")
	}

	if out, code := mptcpcc("unload", "--name", name); code != 0 {
		t.Fatalf("unload: exit %d: %s", code, out)
	}
	if cc.IsRegistered(name) {
		t.Fatalf("%s registered after unload", name)
	}
}
