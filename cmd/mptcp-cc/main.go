// SPDX-License-Identifier: Apache-2.0

// mptcp-cc loads coupled MPTCP congestion controls and packet schedulers
// (BPF struct_ops) into the running kernel and shows what every subflow is
// doing. It only turns flags into calls of pkg/cc, pkg/sched and pkg/stats.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

var app = (&cli.App{
	Name:    "mptcp-cc",
	Summary: "coupled MPTCP congestion controls (BPF struct_ops): load, observe, apply per cgroup",
	Commands: []cli.Command{
		{Name: "load", Summary: "register an algorithm with the kernel (stays after exit)",
			Required: []string{"algo"}, Positional: true, Values: cc.Names(), Help: loadHelp, Flags: cmdLoad},
		{Name: "unload", Summary: "unregister an algorithm",
			Required: []string{"algo|name"}, Positional: true, Values: cc.Names(), Help: unloadHelp, Flags: cmdUnload},
		{Name: "list", Summary: "show loaded algorithms, their parameters and users", Flags: cmdList},
		{Name: "upgrade", Summary: "replace loaded algorithms with this binary's build; open connections keep theirs", Help: upgradeHelp, Flags: cmdUpgrade},
		{Name: "subflows", Summary: "show live per-subflow state (--json for scripts)", Flags: cmdSubflows},
		{Name: "algorithms", Summary: "show the algorithms this build ships", Flags: cmdAlgorithms},
		{Name: "policy", Summary: "per-cgroup CC policy: attach, detach, list", Help: policyHelp, Sub: []cli.Command{
			{Name: "attach", Summary: "new MPTCP subflows of processes in the cgroup (and below it) run the congestion control; --dst/--dport restrict the rule to a peer prefix and a service port; --tcp applies it to plain TCP sockets too",
				Required: []string{"cgroup", "algo"}, Flags: cmdPolicyAttach},
			{Name: "detach", Summary: "remove the cgroup's whole policy, or only some rules",
				Required: []string{"cgroup"}, Flags: cmdPolicyDetach},
			{Name: "list", Summary: "show every policy, its rules and what they did", Flags: cmdPolicyList},
		}},
		{Name: "sched", Summary: "MPTCP packet schedulers (BPF): load, list, use, unload, upgrade; " + sched.Experimental, Help: schedHelp, Sub: []cli.Command{
			{Name: "list", Summary: "show this build's schedulers, the loaded ones with their counters, the kernel's, and each network namespace's",
				Flags: cmdSchedList},
			{Name: "load", Summary: "register a scheduler with the kernel (stays after exit)",
				Required: []string{"algo"}, Positional: true, Values: sched.Names(), Help: schedLoadHelp, Flags: cmdSchedLoad},
			{Name: "unload", Summary: "unregister a loaded scheduler",
				Required: []string{"algo|name"}, Positional: true, Values: sched.Names(), Help: schedUnloadHelp, Flags: cmdSchedUnload},
			{Name: "upgrade", Summary: "replace loaded schedulers with this binary's build (re-registered: the kernel cannot update one in place); open connections keep theirs",
				Args: "[NAME...]", Values: sched.Names(), Help: schedUpgradeHelp, Flags: cmdSchedUpgrade},
			{Name: "use", Summary: "give new MPTCP connections of a network namespace a registered scheduler (net.mptcp.scheduler)",
				Args: "NAME", Values: append([]string{"default"}, sched.Names()...), Flags: cmdSchedUse},
		}},
		{Name: "set", Summary: "switch the CC of a live MPTCP connection, by token",
			Required: []string{"token", "algo"}, Flags: cmdSet},
		{Name: "pathctl", Summary: "path controller for one connection: best-path or multipath by measured goodput, through MP_PRIO (any kernel)",
			Required: []string{"token"}, Help: pathctlHelp, Flags: cmdPathctl},
		{Name: "serve", Summary: "run the daemon: load/adopt algorithms and schedulers, attach policies, serve Prometheus metrics",
			Help: serveHelp, Flags: cmdServe},
		{Name: "top", Summary: "live view of connections and subflows (--once, --json for scripts)", Flags: cmdTop},
		{Name: "doctor", Summary: "check whether this host is ready for mptcp-cc, and what to fix", Help: doctorHelp, Flags: cmdDoctor},
		{Name: "version", Summary: "the version, the build and the kernel features this program needs", Flags: cmdVersion},
	},
	Footer: "README.md and docs/ in the source tree, or /usr/share/doc/mptcp-cc, describe the algorithms, the daemon and the metrics.",
}).WithDocs()

func main() {
	// --version, as operators expect of any daemon binary.
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		os.Args[1] = "version"
	}
	app.Main()
}

// needsRoot adds the fix to a permission error on the pins: they are
// root's alone on purpose (docs/daemon.md, "What an unprivileged local user
// can see or change").
func needsRoot(err error, root string) error {
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("reading the pins under %s needs root (they are root's alone; without root, the metrics on loopback show the same numbers): %w", root, err)
	}
	return err
}

// checkPinRoot refuses, before anything is created, a --bpffs that is
// relative (load would make it in the current directory, list would find
// nothing there) or, for a command that pins (creating), one that is not on
// bpffs: the directory made before pinning failed would be left behind.
// /sys/fs/bpf is exempt: load mounts bpffs there when nothing is.
func checkPinRoot(root string, creating bool) error {
	return checkPinRootFlag("--bpffs", root, creating)
}

// checkPinRootFlag is checkPinRoot for a root given by another flag.
func checkPinRootFlag(flagName, root string, creating bool) error {
	if !filepath.IsAbs(root) {
		return fmt.Errorf("%s %q is not an absolute path: give a directory on bpffs such as /sys/fs/bpf/mptcp-cc", flagName, root)
	}
	if !creating || strings.HasPrefix(filepath.Clean(root)+"/", "/sys/fs/bpf/") {
		return nil
	}
	// The nearest existing directory says which filesystem root would be
	// made on; one this user cannot see is left to the privilege check.
	existing := root
	_, err := os.Stat(existing)
	for errors.Is(err, os.ErrNotExist) && existing != "/" {
		existing = filepath.Dir(existing)
		_, err = os.Stat(existing)
	}
	if err != nil {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(existing, &st); err == nil && st.Type != unix.BPF_FS_MAGIC {
		return fmt.Errorf("%s %s is not on a bpf filesystem: use a directory under /sys/fs/bpf, or mount one first (mount -t bpf bpf DIR)", flagName, root)
	}
	return nil
}

// pinRootFlag is shared by every command that touches pins.
func pinRootFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("MPTCP_CC_BPFFS")
	if def == "" {
		def = cc.DefaultPinRoot
	}
	return fs.String("bpffs", def, "bpffs `DIR` for pins (env MPTCP_CC_BPFFS)")
}
