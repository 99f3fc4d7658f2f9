// SPDX-License-Identifier: Apache-2.0

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
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

// Every command fed invalid values: exit 2 for a wrong command line, 1 for
// a value the command refuses, a message naming the problem (and the fix),
// and nothing pinned, attached, registered or created.
func TestBadInput(t *testing.T) {
	root := testkernel.PinRoot(t)
	bpffs := filepath.Dir(root)
	bin := testenv.Binary(t, ".")
	cg := testkernel.Cgroup(t, "")
	noNS := testenv.Unique("mptcp-cc-none-")
	notBPFFS := t.TempDir() // must stay empty: nothing is created before the check
	badPathctl := filepath.Join(t.TempDir(), "pathctl.yaml")
	if err := os.WriteFile(badPathctl, []byte("pathctl:\n  enabled: true\n  apply: both\n  max_connections: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const long = "much_too_long_a_name"
	env := []string{"MPTCP_CC_BPFFS=" + root, "MPTCP_CC_POLICY_BPFFS=" + filepath.Join(bpffs, "policy"), "MPTCP_CC_SCHED_BPFFS=" + filepath.Join(bpffs, "sched")}
	bad := testkernel.Bad
	scheds := strings.Join(sched.Names(), ", ")
	first := sched.Names()[0]
	var noHook []testkernel.BadArgs
	if !kernel.Probe().SchedStructOps {
		// This machine: every valid load is refused, naming the kernel type
		// that is missing and where the hook exists, with nothing pinned.
		for _, a := range sched.Names() {
			noHook = append(noHook,
				bad(1, []string{"sched", "load", a}, sched.ErrNoHook.Error(), "bpf_struct_ops_mptcp_sched_ops", "mptcp_net-next"),
				bad(1, []string{"sched", "load", a, "--name", "t_" + a[:min(len(a), 8)], "--trace", "--arg", "0=1"}, sched.ErrNoHook.Error()),
				bad(1, []string{"sched", "load", "--algo", a}, sched.ErrNoHook.Error()))
		}
	} else {
		t.Log("this kernel has the scheduler hook: the refusal of sched load without it is not checked")
	}
	testkernel.CheckBadArgs(t, bin, root, env, append(noHook, []testkernel.BadArgs{
		bad(2, []string{"frobnicate"}, `unknown command "frobnicate"`),

		bad(2, []string{"load"}, "--algo is required", "one of balia, lia, olia, rsf"),
		bad(2, []string{"load", "--algo", "cubic2"}, `unknown algorithm "cubic2"`, "choose one of"),
		bad(2, []string{"load", "cubic2"}, `unknown algorithm "cubic2"`, "choose one of"),
		bad(2, []string{"load", "olia", "--algo", "lia"}, `"olia" and --algo lia are two names: give one`),
		bad(2, []string{"load", "--algo", "olia", "--rsf-target", "20ms"}, "--rsf-target is a parameter of rsf only; olia does not read it"),
		bad(2, []string{"load", "lia", "--rsf-target", "10ms"}, "--rsf-target is a parameter of rsf only; lia does not read it"),
		bad(1, []string{"load", "--algo", "lia", "--max-subflows", "0"}, "--max-subflows 0", "1 to 65536"),
		bad(1, []string{"load", "--algo", "lia", "--max-subflows", "70000"}, "--max-subflows 70000", "1 to 65536"),
		bad(1, []string{"load", "--algo", "lia", "--name", long}, long, "1 to 15 characters"),
		bad(1, []string{"load", "--algo", "lia", "--name", "a/b"}, `"a/b"`, "use only a-z"),
		bad(1, []string{"load", "--algo", "rsf", "--rsf-target", "-1s"}, "-1s", "out of range"),
		bad(1, []string{"load", "--algo", "rsf", "--rsf-target", "0"}, "--rsf-target 0s is out of range (1µs to 1h)"),
		bad(2, []string{"load", "--algo", "rsf", "--rsf-target", "abc"}, `invalid value "abc" for flag --rsf-target: want a duration`),
		bad(2, []string{"load", "--algo", "lia", "--nope"}, "flag provided but not defined: --nope", "`mptcp-cc load -h` shows the usage"),
		bad(2, []string{"load", "lia", "extra"}, `unexpected argument "extra"`),

		bad(1, []string{"load", "--algo", "lia", "--bpffs", "relative/dir"}, `--bpffs "relative/dir" is not an absolute path`),
		bad(1, []string{"load", "--algo", "lia", "--bpffs", notBPFFS + "/mptcp-cc"}, "is not on a bpf filesystem", "mount -t bpf"),
		bad(1, []string{"list", "--bpffs", "relative/dir"}, "not an absolute path"),
		bad(1, []string{"policy", "attach", "--cgroup", cg, "--algo", "reno", "--bpffs", notBPFFS + "/policy"}, "is not on a bpf filesystem"),
		bad(2, []string{"unload"}, "say what to unload"),
		bad(2, []string{"unload", "--algo", "nope"}, `unknown algorithm "nope"`),
		bad(2, []string{"unload", "olia", "--algo", "lia"}, `"olia" and --algo lia are two names`),
		bad(2, []string{"unload", "olia", "--name", "t_x"}, `unexpected argument "olia": --name says what to unload`),
		bad(1, []string{"unload", "--name", "../../etc"}, `--name "../../etc" is not a congestion control name`),
		bad(1, []string{"unload", "--name", long}, "1 to 15 characters"),
		bad(1, []string{"unload", "--name", "t_none_loaded"}, "t_none_loaded is not loaded", "`mptcp-cc list`"),

		bad(2, []string{"list", "--json=maybe"}, `invalid boolean value "maybe" for --json: want true or false`),
		bad(2, []string{"list", "extra"}, `unexpected argument "extra"`),

		bad(2, []string{"subflows", "--watch", "abc"}, `invalid value "abc" for flag --watch`),
		bad(1, []string{"subflows", "--watch", "-1s"}, "--watch -1s", "positive"),

		bad(2, []string{"policy"}, "attach, detach or list"),
		bad(2, []string{"policy", "frobnicate"}, `unknown subcommand "frobnicate"`),
		bad(2, []string{"policy", "attach", "--algo", "reno"}, "--cgroup is required"),
		bad(2, []string{"policy", "attach", "--cgroup", cg}, "--algo is required"),
		bad(1, []string{"policy", "attach", "--cgroup", "../../etc", "--algo", "reno"}, `"../../etc" contains ".."`, "relative to the cgroup v2 mount"),
		bad(1, []string{"policy", "attach", "--cgroup", cg + "/../..", "--algo", "reno"}, `contains ".."`),
		bad(1, []string{"policy", "attach", "--cgroup", cg + "/nope", "--algo", "reno"}, "does not exist", "mkdir"),
		bad(1, []string{"policy", "attach", "--cgroup", cg, "--algo", "reno", "--dst", "10.0.0.0/33"}, `bad --dst "10.0.0.0/33"`, "10.0.0.0/8"),
		bad(1, []string{"policy", "attach", "--cgroup", cg, "--algo", "reno", "--dst", "nonsense"}, `bad --dst "nonsense"`),
		bad(1, []string{"policy", "attach", "--cgroup", cg, "--algo", "reno", "--delack-max", "1s"}, "delayed-ACK cap 1s is outside what the kernel takes", "200ms"),
		bad(1, []string{"policy", "attach", "--cgroup", cg, "--algo", "reno", "--delack-max", "-5ms"}, "bad --delack-max -5ms"),
		bad(2, []string{"policy", "attach", "--cgroup", cg, "--algo", "reno", "--delack-max", "soon"}, "delack-max"),
		bad(1, []string{"policy", "attach", "--cgroup", cg, "--algo", "reno", "--dport", "70000"}, "bad --dport 70000", "1 to 65535"),
		bad(2, []string{"policy", "attach", "--cgroup", cg, "--algo", "reno", "--dport", "-1"}, `invalid value "-1" for flag --dport`),
		bad(1, []string{"policy", "attach", "--cgroup", cg, "--algo", long}, long),
		bad(1, []string{"policy", "attach", "--cgroup", cg, "--algo", "olia"}, "load it first with `mptcp-cc load --algo olia`"),
		bad(2, []string{"policy", "detach"}, "--cgroup is required"),
		bad(1, []string{"policy", "detach", "--cgroup", "a/../../etc"}, `contains ".."`),
		bad(1, []string{"policy", "detach", "--cgroup", cg}, "has no policy"),
		bad(2, []string{"policy", "detach", "--cgroup", cg, "--algo", "reno", "--rule", "1"}, "give --algo or --rule, not both"),
		bad(2, []string{"policy", "detach", "--cgroup", cg, "--rule", "abc"}, `invalid value "abc" for flag --rule`),
		bad(2, []string{"policy", "list", "--json=maybe"}, `invalid boolean value "maybe"`),

		bad(2, []string{"pathctl"}, "--token is required"),
		bad(1, []string{"pathctl", "--token", "zz"}, `bad token "zz"`, "hex"),
		bad(2, []string{"pathctl", "--token", "1234", "--apply", "both"}, `unknown apply mode "both"`, "connection, endpoint or auto"),
		bad(1, []string{"pathctl", "--token", "1234", "--period", "1ms"}, "--period 1ms is out of range"),
		bad(1, []string{"pathctl", "--token", "1234", "--for", "-1s"}, "--for -1s is negative"),
		bad(2, []string{"pathctl", "--token", "1234", "--prefer", "speed"}, `--prefer: "speed" is neither goodput`, "latency"),
		bad(1, []string{"pathctl", "--token", "1234", "--for", "3s", "--apply", "endpoint"}, "no such connection", "token 00001234", "mptcp-cc subflows"),
		bad(1, []string{"pathctl", "--token", "1234", "--for", "3s"}, "runs the in-kernel path manager", "--apply endpoint", "every connection that uses it"),
		bad(1, []string{"pathctl", "--token", "1234", "--netns", noNS}, noNS),
		bad(1, []string{"pathctl", "--token", "1234", "--state-dir", "run/x"}, `--state-dir "run/x" is not an absolute path`),
		bad(1, []string{"serve", "--config", badPathctl, "--config.check"}, badPathctl+":3: pathctl.apply: unknown apply mode \"both\"", badPathctl+":4: pathctl.max_connections: -1 is out of range"),
		bad(2, []string{"set"}, "--token is required"),
		bad(2, []string{"set", "--token", "1234"}, "--algo is required"),
		bad(1, []string{"set", "--token", "zz", "--algo", "reno"}, `bad token "zz"`, "hex"),
		bad(1, []string{"set", "--token", "123456789", "--algo", "reno"}, `bad token "123456789"`, "up to 8 hex digits"),
		bad(1, []string{"set", "--token", "1234", "--algo", long}, long, "1 to 15 characters"),
		bad(1, []string{"set", "--token", "1234", "--algo", "reno", "--netns", noNS}, noNS, "does not exist", "ip netns list"),
		bad(1, []string{"set", "--token", "1234", "--algo", "reno", "--netns", "../../proc/1/ns/net"}, "../../proc/1/ns/net", "no '/'"),

		bad(2, []string{"serve", "--config.check"}, "--config.check needs --config FILE"),
		bad(1, []string{"serve", "--config", "/nonexistent/mptcp-cc.yaml", "--config.check"}, "/nonexistent/mptcp-cc.yaml", "no such file"),
		bad(1, []string{"serve", "--web.listen-address", "0.0.0.0:9464"}, "not a loopback address", "--web.allow-remote"),
		bad(1, []string{"serve", "--web.listen-address", "nonsense"}, `"nonsense"`, "HOST:PORT"),
		bad(1, []string{"serve", "--web.listen-address", "127.0.0.1:99999"}, "99999"),
		bad(2, []string{"serve", "--on-exit", "maybe"}, "maybe", "keep", "remove"),
		bad(2, []string{"serve", "--log.level", "loud"}, `--log.level "loud"`, "debug, info, warn or error"),
		bad(1, []string{"serve", "--events.netns", "../x", "--config.check", "--config", "/dev/null"}, "events.namespaces[0]", `"../x" is not a network namespace name`),

		bad(2, []string{"top", "--sort", "speed"}, `unknown sort key "speed"`),
		bad(2, []string{"top", "--interval", "abc"}, `invalid value "abc" for flag --interval`),
		bad(1, []string{"top", "--interval", "1ms"}, "too short"),
		bad(1, []string{"top", "--closed", "-1"}, "--closed -1"),
		bad(1, []string{"top", "--pathctl-state", "run/x"}, `--pathctl-state "run/x" is not an absolute path`),
		bad(1, []string{"top", "--once", "--netns", noNS}, noNS, "does not exist", "ip netns list"),
		bad(1, []string{"top", "--once", "--netns", "../../proc/1/ns/net"}, "no '/'"),

		bad(2, []string{"version", "--json=maybe"}, `invalid boolean value "maybe"`),
		bad(2, []string{"version", "extra"}, `unexpected argument "extra"`),

		bad(2, []string{"sched"}, "say what to do: list, load, unload, upgrade or use"),
		bad(2, []string{"sched", "frobnicate"}, `unknown subcommand "frobnicate"`),
		bad(2, []string{"sched", "load"}, "--algo is required: one of "+scheds),
		bad(2, []string{"sched", "load", "nope"}, `no such scheduler "nope"`, "choose one of "+scheds),
		bad(2, []string{"sched", "load", "--algo", "nope"}, `no such scheduler "nope"`),
		bad(2, []string{"sched", "load", first, "--algo", "nope"}, "are two names: give one"),
		bad(2, []string{"sched", "load", first, "extra"}, `unexpected argument "extra"`),
		bad(1, []string{"sched", "load", first, "--name", long}, long, "1 to 15 characters"),
		bad(1, []string{"sched", "load", first, "--name", "a/b"}, `"a/b"`, "use only a-z"),
		bad(1, []string{"sched", "load", first, "--name", "default"}, "the kernel's own scheduler", "--name"),
		bad(1, []string{"sched", "upgrade", "a/b"}, `"a/b"`, "use only a-z"),
		bad(1, []string{"sched", "upgrade", "--bpffs", "relative/dir"}, `"relative/dir" is not an absolute path`),
		bad(2, []string{"sched", "load", first, "--arg", "6=1"}, `invalid value "6=1" for flag --arg`, "INDEX 0 to 5"),
		bad(2, []string{"sched", "load", first, "--arg", "0=x"}, `"x" is not a number`),
		bad(2, []string{"sched", "load", first, "--arg", "0"}, "INDEX=VALUE"),
		bad(2, []string{"sched", "load", first, "--arg", "0=1", "--arg", "0=2"}, "tunable 0 is given twice"),
		bad(1, []string{"sched", "load", first, "--bpffs", "relative/dir"}, `--bpffs "relative/dir" is not an absolute path`),
		bad(1, []string{"sched", "load", first, "--bpffs", notBPFFS + "/sched"}, "is not on a bpf filesystem", "mount -t bpf"),
		bad(2, []string{"sched", "unload"}, "say which scheduler"),
		bad(1, []string{"sched", "unload", "../../etc"}, `"../../etc"`, "use only a-z"),
		bad(1, []string{"sched", "unload", "t_none_loaded"}, "t_none_loaded is not loaded", "`mptcp-cc sched list`"),
		bad(2, []string{"sched", "unload", "a", "b"}, `unexpected argument "b"`),
		bad(2, []string{"sched", "unload", "--algo", "nope"}, `no such scheduler "nope"`),
		bad(2, []string{"sched", "unload", "--algo", first, "--name", "t_x"}, "are two names: give one"),
		bad(1, []string{"sched", "unload", "--name", "t_none_loaded"}, "t_none_loaded is not loaded"),
		bad(2, []string{"sched", "use"}, "say which scheduler", "`mptcp-cc sched list`"),
		bad(1, []string{"sched", "use", "t_unregistered"}, `"t_unregistered" is not registered`, "default", "mptcp-cc sched load"),
		bad(1, []string{"sched", "use", first, "--netns", noNS}, noNS, "does not exist", "ip netns list"),
		bad(1, []string{"sched", "use", "default", "--netns", "../../proc/1/ns/net"}, "no '/'"),
		bad(2, []string{"sched", "list", "--json=maybe"}, `invalid boolean value "maybe"`),
		bad(2, []string{"sched", "list", "extra"}, `unexpected argument "extra"`),
		bad(1, []string{"sched", "list", "--bpffs", "relative/dir"}, "not an absolute path"),
		bad(1, []string{"subflows", "--sched-bpffs", "relative/dir"}, `--sched-bpffs "relative/dir" is not an absolute path`),
		bad(1, []string{"top", "--once", "--sched-bpffs", "relative/dir"}, `--sched-bpffs "relative/dir" is not an absolute path`),
	}...))
	if entries, _ := os.ReadDir(notBPFFS); len(entries) != 0 {
		t.Errorf("a --bpffs off bpffs left %v", entries)
	}
}

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
