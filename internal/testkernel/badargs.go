// SPDX-License-Identifier: Apache-2.0

package testkernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

// BadArgs is one invalid command line and what must come of it.
type BadArgs struct {
	Args []string
	Code int      // 2: the command line is wrong; 1: the command refused it (internal/cli)
	Want []string // what the message must say: the problem, and the fix where there is one
}

// Bad is a BadArgs: args must exit with code and say every one of want.
func Bad(code int, args []string, want ...string) BadArgs {
	return BadArgs{Args: args, Code: code, Want: want}
}

// CheckBadArgs runs bin (testenv.Binary) with every case's arguments and
// env added to the environment. Each case must exit with its code, say
// what it wants, and leave nothing behind: the bpffs of root (what PinRoot
// returned) holds no pin, no congestion control, packet scheduler or
// network namespace appeared that the command could have made, and the
// caller's namespace gives new MPTCP connections the scheduler it gave
// before.
func CheckBadArgs(t *testing.T, bin, root string, env []string, cases []BadArgs) {
	t.Helper()
	bpffs := filepath.Dir(root)
	for _, c := range cases {
		ccs, nss := registered(t), namespaces(t)
		scheds, _ := sched.Available()
		cur, _ := sched.Current("")
		cmd := exec.Command(bin, c.Args...)
		cmd.Env = append(os.Environ(), env...)
		out, _ := cmd.CombinedOutput()
		code := cmd.ProcessState.ExitCode()
		line := filepath.Base(bin) + " " + strings.Join(c.Args, " ")
		if code != c.Code {
			t.Errorf("%s: exit %d, want %d:\n%s", line, code, c.Code, out)
		}
		for _, w := range c.Want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: the message lacks %q:\n%s", line, w, out)
			}
		}
		if strings.Contains(string(out), "panic:") || strings.Contains(string(out), "goroutine ") {
			t.Errorf("%s panicked:\n%s", line, out)
		}
		if pins := Pins(t, bpffs); len(pins) > 0 {
			t.Errorf("%s left pins: %v", line, pins)
		}
		// Other tests on the machine register and create their own at the
		// same time: count only names this command line could have made.
		mine := func(name string) bool {
			return strings.HasPrefix(name, "mptcp_") || strings.HasPrefix(name, "mplab-") || slices.Contains(c.Args, name)
		}
		for _, n := range registered(t) {
			if !slices.Contains(ccs, n) && mine(n) {
				t.Errorf("%s left congestion control %s registered", line, n)
			}
		}
		for _, n := range namespaces(t) {
			if !slices.Contains(nss, n) && mine(n) {
				t.Errorf("%s left network namespace %s", line, n)
			}
		}
		now, _ := sched.Available()
		for _, n := range now {
			if !slices.Contains(scheds, n) && mine(n) {
				t.Errorf("%s left packet scheduler %s registered", line, n)
			}
		}
		if after, _ := sched.Current(""); after != cur {
			t.Errorf("%s changed this namespace's scheduler from %q to %q", line, cur, after)
		}
	}
}

// Pins lists what is in a bpffs mount but the kernel's own *.debug files
// (the preloaded iterators every bpffs instance shows).
func Pins(t testing.TB, bpffs string) []string {
	t.Helper()
	var pins []string
	err := filepath.WalkDir(bpffs, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != bpffs && !(filepath.Dir(p) == bpffs && strings.HasSuffix(p, ".debug")) {
			pins = append(pins, strings.TrimPrefix(p, bpffs+"/"))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing %s: %v", bpffs, err)
	}
	return pins
}

func registered(t testing.TB) []string {
	names, err := kernel.CongestionControls()
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func namespaces(t testing.TB) []string {
	entries, err := os.ReadDir(netns.Dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
