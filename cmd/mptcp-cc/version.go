// SPDX-License-Identifier: Apache-2.0

package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/internal/version"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

func cmdVersion(fs *flag.FlagSet) cli.Action {
	asJSON := fs.Bool("json", false, "JSON output")
	return func(_ []string, out io.Writer) error {
		v := struct {
			Version string          `json:"version"`
			Commit  string          `json:"commit"`
			Go      string          `json:"go"`
			Ebpf    string          `json:"cilium_ebpf"`
			Kernel  kernel.Features `json:"kernel"`
		}{version.Version, version.Commit, runtime.Version(), moduleVersion("github.com/cilium/ebpf"), kernel.Probe()}
		if *asJSON {
			return cli.WriteJSON(out, v)
		}
		yes := func(b bool) string {
			if b {
				return "yes"
			}
			return "no"
		}
		fmt.Fprintf(out, "mptcp-cc %s (commit %s), %s, cilium/ebpf %s\n", v.Version, v.Commit, v.Go, v.Ebpf)
		k := v.Kernel
		fmt.Fprintf(out, "kernel %s:\n", k.Release)
		fmt.Fprintf(out, "  BTF                               %s\n", yes(k.BTF))
		fmt.Fprintf(out, "  struct_ops for tcp_congestion_ops %s\n", yes(k.CCStructOps))
		fmt.Fprintf(out, "  MPTCP enabled                     %s\n", yes(k.MPTCP))
		fmt.Fprintf(out, "  BPF MPTCP scheduler hook          %s\n", yes(k.SchedStructOps))
		if k.Err != "" {
			fmt.Fprintf(out, "  (kernel BTF unreadable: %s; needs CONFIG_DEBUG_INFO_BTF=y)\n", k.Err)
		}
		if k.BTF && !k.SchedStructOps {
			fmt.Fprintln(out, "  (no released kernel has the scheduler hook; mptcp_net-next's export branch does)")
		}
		return nil
	}
}

// moduleVersion is the version of a dependency compiled into this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "unknown"
}
