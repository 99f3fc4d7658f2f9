// mptcp-cc loads coupled MPTCP congestion controls (BPF struct_ops) into the
// running kernel and shows what every subflow is doing. It only turns flags
// into calls of pkg/cc and pkg/stats.
package main

import (
	"flag"
	"os"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
)

var app = cli.App{
	Name: "mptcp-cc",
	Commands: []cli.Command{
		{Name: "load", Summary: "register an algorithm with the kernel (stays after exit)", Run: cmdLoad},
		{Name: "unload", Summary: "unregister an algorithm", Run: cmdUnload},
		{Name: "list", Summary: "show loaded algorithms, their parameters and users", Run: cmdList},
		{Name: "subflows", Summary: "show live per-subflow state (--json for scripts)", Run: cmdSubflows},
		{Name: "algorithms", Summary: "show the algorithms this build ships", Run: cmdAlgorithms},
		{Name: "policy", Summary: "per-cgroup CC policy: attach, detach, list", Run: cmdPolicy},
		{Name: "set", Summary: "switch the CC of a live MPTCP connection, by token", Run: cmdSet},
		{Name: "serve", Summary: "run the daemon: load/adopt algorithms, attach policies, serve Prometheus metrics", Run: cmdServe},
		{Name: "top", Summary: "live view of connections and subflows (--once, --json for scripts)", Run: cmdTop},
	},
}

func main() { app.Main() }

// newFlags makes the flag set of "mptcp-cc NAME".
func newFlags(name, args string) *flag.FlagSet { return cli.NewFlags("mptcp-cc", name, args) }

// pinRootFlag is shared by every command that touches pins.
func pinRootFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("MPTCP_CC_BPFFS")
	if def == "" {
		def = "/sys/fs/bpf/mptcp-cc"
	}
	return fs.String("bpffs", def, "bpffs directory for pins (env MPTCP_CC_BPFFS)")
}
