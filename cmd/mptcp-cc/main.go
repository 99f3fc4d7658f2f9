// mptcp-cc loads coupled MPTCP congestion controls (BPF struct_ops) into the
// running kernel and shows what every subflow is doing. It only turns flags
// into calls of pkg/cc and pkg/stats.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

type command struct {
	name    string
	summary string
	run     func(args []string, stdout io.Writer) error
}

var commands []command

func init() {
	commands = []command{
		{"load", "register an algorithm with the kernel (stays after exit)", cmdLoad},
		{"unload", "unregister an algorithm", cmdUnload},
		{"list", "show loaded algorithms, their parameters and users", cmdList},
		{"subflows", "show live per-subflow state (--json for scripts)", cmdSubflows},
		{"algorithms", "show the algorithms this build ships", cmdAlgorithms},
		{"policy", "per-cgroup CC policy: attach, detach, list", cmdPolicy},
		{"set", "switch the CC of a live MPTCP connection, by token", cmdSet},
		{"serve", "run the daemon: load/adopt algorithms, attach policies, serve Prometheus metrics", cmdServe},
		{"top", "live view of connections and subflows (--once, --json for scripts)", cmdTop},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: mptcp-cc COMMAND [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\n`mptcp-cc COMMAND -h` shows a command's flags.\n")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage(os.Stdout)
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	name := os.Args[1]
	for _, c := range commands {
		if c.name != name {
			continue
		}
		if err := c.run(os.Args[2:], os.Stdout); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return
			}
			fmt.Fprintf(os.Stderr, "mptcp-cc %s: %v\n", name, err)
			os.Exit(1)
		}
		return
	}
	fmt.Fprintf(os.Stderr, "mptcp-cc: unknown command %q\n\n", name)
	usage(os.Stderr)
	os.Exit(2)
}

// newFlags makes a flag set whose errors are returned, not printed and exited.
func newFlags(name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: mptcp-cc %s %s\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags start with --)", strings.Join(fs.Args(), " "))
	}
	return nil
}

// pinRootFlag is shared by every command that touches pins.
func pinRootFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("MPTCP_CC_BPFFS")
	if def == "" {
		def = "/sys/fs/bpf/mptcp-cc"
	}
	return fs.String("bpffs", def, "bpffs directory for pins (env MPTCP_CC_BPFFS)")
}
