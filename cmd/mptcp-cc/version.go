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
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

func cmdVersion(fs *flag.FlagSet) cli.Action {
	asJSON := fs.Bool("json", false, "JSON output")
	return func(_ []string, out io.Writer) error {
		abi, err := cc.ABI()
		if err != nil {
			return err
		}
		v := struct {
			Version string `json:"version"`
			Commit  string `json:"commit"`
			// BPFABI is the layout hash of the maps the CCs pin
			// (`mptcp-cc upgrade` replaces in place only within one).
			BPFABI string          `json:"bpf_abi"`
			Go     string          `json:"go"`
			Ebpf   string          `json:"cilium_ebpf"`
			Kernel kernel.Features `json:"kernel"`
		}{version.Version, version.Commit, abi, runtime.Version(), moduleVersion("github.com/cilium/ebpf"), kernel.Probe()}
		if *asJSON {
			return cli.WriteJSON(out, v)
		}
		fmt.Fprintf(out, "mptcp-cc %s (commit %s, BPF ABI %s), %s, cilium/ebpf %s\n", v.Version, v.Commit, v.BPFABI, v.Go, v.Ebpf)
		writeKernelVerdicts(out, v.Kernel)
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

// writeKernelVerdicts prints one line per kernel feature (yes/no, the
// Linux version that brings it, what decided it), then what each command
// can do here, with the remedy where one cannot.
func writeKernelVerdicts(out io.Writer, k kernel.Features) {
	fmt.Fprintf(out, "kernel %s:\n", k.Release)
	for _, f := range k.Verdicts {
		yes := "no "
		if f.OK {
			yes = "yes"
		}
		since := f.Since
		if since != "" && since[0] >= '0' && since[0] <= '9' {
			since = "Linux " + since
		}
		fmt.Fprintf(out, "  %-48s %s  (%s; %s)\n", f.What, yes, since, f.Detail)
	}
	for _, n := range []kernel.Need{kernel.NeedLoad, kernel.NeedPolicy, kernel.NeedSet} {
		if err := n.CheckIn(k); err != nil {
			fmt.Fprintf(out, "%s: refused: %v\n", n.Command, err)
		} else {
			fmt.Fprintf(out, "%s: ok\n", n.Command)
		}
	}
}
