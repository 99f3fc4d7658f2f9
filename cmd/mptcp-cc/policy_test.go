// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

// policy and set on bad input: a message naming the problem, a non-zero
// exit, nothing attached or pinned.
func TestPolicySetCLIErrors(t *testing.T) {
	ccRoot := testkernel.PinRoot(t)
	proot := filepath.Join(filepath.Dir(ccRoot), "mptcp-cc-policy")
	bin := testenv.Binary(t, ".")
	mnt, err := policy.CgroupMount()
	if err != nil {
		t.Fatal(err)
	}
	cg := filepath.Join(mnt, testenv.Unique("mptcp-cc-cli-"))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = policy.Detach(cg, proot)
		if err := unix.Rmdir(cg); err != nil {
			t.Errorf("removing cgroup %s: %v", cg, err)
		}
	})
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "MPTCP_CC_POLICY_BPFFS="+proot)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"policy"}, "attach, detach or list"},
		{[]string{"policy", "frobnicate"}, `unknown subcommand "frobnicate"`},
		{[]string{"policy", "attach", "--algo", "reno"}, "--cgroup is required"},
		{[]string{"policy", "attach", "--cgroup", cg}, "--algo is required"},
		{[]string{"policy", "attach", "--cgroup", cg + "/nope", "--algo", "reno"}, "does not exist"},
		{[]string{"policy", "attach", "--cgroup", cg, "--algo", "olia"}, "load it first with `mptcp-cc load --algo olia`"},
		{[]string{"policy", "attach", "--cgroup", cg, "--algo", "no_such_cc"}, "is not a registered congestion control"},
		{[]string{"policy", "attach", "--cgroup", cg, "--algo", "reno", "--dst", "10.0.0.0/33"}, `bad --dst "10.0.0.0/33"`},
		{[]string{"policy", "attach", "--cgroup", cg, "--algo", "reno", "--dst", "10.0.0.1/8"}, "did you mean 10.0.0.0/8"},
		{[]string{"policy", "attach", "--cgroup", cg, "--algo", "reno", "--dport", "70000"}, "bad --dport 70000"},
		{[]string{"policy", "detach", "--cgroup", cg}, "has no policy"},
		{[]string{"policy", "detach", "--cgroup", cg, "--algo", "reno", "--rule", "1"}, "not both"},
		{[]string{"set", "--algo", "reno"}, "--token is required"},
		{[]string{"set", "--token", "1234"}, "--algo is required"},
		{[]string{"set", "--token", "xyz", "--algo", "reno"}, `bad token "xyz"`},
		{[]string{"set", "--token", "1234abcd", "--algo", "olia"}, "load it first with `mptcp-cc load --algo olia`"},
		{[]string{"set", "--token", "1234abcd", "--algo", "reno", "--netns", "mptcp-cc-no-such-ns"}, "does not exist"},
	}
	for _, c := range cases {
		out, code := run(c.args...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("mptcp-cc %s: exit %d, output %q; want non-zero and %q", strings.Join(c.args, " "), code, out, c.want)
		}
	}
	if list, err := policy.List(proot); err != nil || len(list) != 0 {
		t.Errorf("policies after bad input: %+v, %v", list, err)
	}

	// The happy path, once: attach, list, detach.
	if out, code := run("policy", "attach", "--cgroup", cg, "--algo", "reno", "--dst", "10.0.0.0/8", "--dport", "443", "--tcp"); code != 0 ||
		!strings.Contains(out, "rule 1 in "+cg) {
		t.Fatalf("attach: exit %d, %q", code, out)
	}
	if out, code := run("policy", "list"); code != 0 || !strings.Contains(out, cg) || !strings.Contains(out, "10.0.0.0/8") {
		t.Errorf("list: exit %d, %q", code, out)
	}
	if out, code := run("policy", "detach", "--cgroup", cg); code != 0 || !strings.Contains(out, "detached") {
		t.Errorf("detach: exit %d, %q", code, out)
	}
	if out, _ := run("policy", "list"); !strings.Contains(out, "no policy attached") {
		t.Errorf("list after detach: %q", out)
	}
}
