// SPDX-License-Identifier: Apache-2.0

package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/doctor"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

const doctorHelp = `Checks whether this host is ready for mptcp-cc and says what to do where
it is not, one finding per line with its fix: the kernel's features, the
privileges, bpffs, MPTCP, the path manager's endpoints and limits (will a
connection get a second subflow?), the default and allowed congestion
controls, the loaded algorithms and the build that loaded them, DSS
checksums and the faults known for this kernel, the scheduler hook. It
changes nothing. Exit status 0: ready (warnings may remain); 1: not ready.`

func cmdDoctor(fs *flag.FlagSet) cli.Action {
	ns := fs.String("netns", "", "check the named network namespace `NAME` (ip netns) instead of this process's")
	asJSON := fs.Bool("json", false, "JSON output")
	root := pinRootFlag(fs)
	schedRoot := schedRootFlag(fs, "sched-bpffs")
	return func(_ []string, out io.Writer) error {
		if *ns != "" {
			if err := netns.CheckName(*ns); err != nil {
				return cli.Usagef("--netns: %v", err)
			}
			if !netns.Exists(*ns) {
				return fmt.Errorf("--netns %s: no such network namespace (`ip netns list` shows them)", *ns)
			}
		}
		if err := checkPinRoot(*root, false); err != nil {
			return err
		}
		if err := checkPinRootFlag("--sched-bpffs", *schedRoot, false); err != nil {
			return err
		}
		findings := doctor.Run(doctor.Options{Netns: *ns, PinRoot: *root, SchedPinRoot: *schedRoot})
		ready := doctor.Ready(findings)
		if *asJSON {
			if err := cli.WriteJSON(out, struct {
				Release  string           `json:"release"`
				Netns    string           `json:"netns"`
				Ready    bool             `json:"ready"`
				Findings []doctor.Finding `json:"findings"`
			}{kernel.Release(), *ns, ready, findings}); err != nil {
				return err
			}
		} else {
			printFindings(out, findings, ready)
		}
		if !ready {
			return cli.ErrReported
		}
		return nil
	}
}

func printFindings(out io.Writer, findings []doctor.Finding, ready bool) {
	width := 0
	for _, f := range findings {
		width = max(width, len(f.Check))
	}
	indent := strings.Repeat(" ", 6+width+2)
	counts := map[doctor.Severity]int{}
	for _, f := range findings {
		counts[f.Severity]++
		fmt.Fprintf(out, "%-4s  %-*s  %s\n", f.Severity, width, f.Check, f.Summary)
		if f.Fix != "" {
			fmt.Fprintf(out, "%sfix: %s\n", indent, f.Fix)
		}
		if f.Doc != "" && f.Severity != doctor.OK {
			fmt.Fprintf(out, "%ssee: %s\n", indent, f.Doc)
		}
	}
	if ready {
		fmt.Fprintf(out, "ready (%d warning(s))\n", counts[doctor.Warn])
	} else {
		fmt.Fprintf(out, "NOT READY: %d failure(s), %d warning(s)\n", counts[doctor.Fail], counts[doctor.Warn])
	}
}
