// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/lab/cawatch"
	"github.com/mptcp-cc/mptcp-cc/lab/ssthresh"
	"github.com/mptcp-cc/mptcp-cc/pkg/algo"
	_ "github.com/mptcp-cc/mptcp-cc/pkg/model" // our congestion controls register there
)

// ssthreshArms are the arms that tell the kernel's MPTCP code from its
// struct_ops path: ours, the kernel's Reno through BPF, the kernel's own on
// MPTCP subflows, and cubic on plain TCP. Ours are pkg/algo's table.
var ssthreshArms = append(algo.Names(algo.CC), bpfRenoArm, "reno", "cubic", "cubic+tcp")

var ssthreshHelp = `Runs the same lossy load on every arm at once (two 20 Mbit/s paths, 10 ms
each way, 3% loss; 4 MPTCP connections of 2 subflows, or 8 TCP connections
with +tcp), each watched by a read-only tracing program (lab/cawatch) that
reads ssthresh, prior_ssthresh, cwnd and prior_cwnd at every CA state change,
every proportional-rate-reduction step and every received segment (and
every undo where the kernel allows fentry programs). Prints, per arm,
implausible ssthresh values per 10,000 window reductions with the 95%
interval, and each sighting with the socket state and whether the value
is the low half of an address near the socket.
An arm is a congestion control (a built-in one; ` + strings.Join(algo.Names(algo.CC), ", ") + `,
loaded for the run; or bpfreno, the kernel's Reno through BPF struct_ops),
with +tcp for plain TCP instead of MPTCP. docs/kernel-faults.md, section 2,
is the report made from it.`

func cmdSsthresh(fs *flag.FlagSet) cli.Action {
	dur := fs.Duration("for", 10*time.Minute, "how long every arm runs (all at once)")
	limit := fs.Uint("limit", cawatch.DefaultLimit, "the largest plausible window, in `PACKETS`")
	jsonOut := fs.String("json", "", "also write the report, every sighting included, as JSON to this `FILE`")
	noJanitor := fs.Bool("no-janitor", false, "do not start the janitor (tests)")
	return func(args []string, stdout io.Writer) error {
		if *dur < time.Second || *dur > 24*time.Hour {
			return fmt.Errorf("--for %s: want 1s to 24h", *dur)
		}
		if *limit < 1 || *limit > 1<<31 {
			return fmt.Errorf("--limit %d: want 1 to 2147483648 packets", *limit)
		}
		if len(args) == 0 {
			args = ssthreshArms
		}
		var arms []ssthresh.Arm
		for _, s := range args {
			a, err := ssthresh.ParseArm(s)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			arms = append(arms, a)
		}
		s, err := newSession(*noJanitor)
		if err != nil {
			return err
		}
		run := func() (rep ssthresh.Report, err error) {
			l := newCCLoader(s.id)
			defer func() { err = errors.Join(err, l.unload()) }()
			for i := range arms {
				if arms[i].CC, err = l.name(arms[i].CC, false); err != nil {
					return ssthresh.Report{}, err
				}
			}
			fmt.Fprintf(os.Stderr, "mptcp-lab: arms %v for %s, all at once (run %s)\n", args, *dur, s.id)
			return ssthresh.Run(s.ctx, ssthresh.Options{Prefix: s.id.NSPrefix(), Arms: arms, For: *dur,
				Limit: uint32(*limit), Progress: os.Stderr})
		}
		rep, err := run()
		return s.finish(err, rep, len(rep.Arms) > 0, stdout, *jsonOut)
	}
}
