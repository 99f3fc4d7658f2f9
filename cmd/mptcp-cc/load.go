// SPDX-License-Identifier: Apache-2.0

package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

func cmdLoad(fs *flag.FlagSet) cli.Action {
	algo := fs.String("algo", "", "algorithm: "+joinNames())
	name := fs.String("name", "", "name to register under (default mptcp_ALGO)")
	lisa := fs.Bool("lisa", false, "LISA linked slow start for joining subflows")
	target := fs.Duration("rsf-target", cc.DefaultRSFTarget, "RSF target queueing delay d")
	trace := fs.Bool("trace", false, "record every decision in the trace ring buffer (for debugging and tests)")
	pacing := fs.Bool("pacing", false, "pace each subflow at about its window per RTT (the kernel's TCP pacing) instead of sending in bursts")
	maxSubflows := fs.Uint("max-subflows", cc.MaxSubflowsTracked, "live subflows the readers can see (list, subflows, top, metrics); more still run the algorithm, counted as untracked")
	root := pinRootFlag(fs)
	return func(_ []string, out io.Writer) error {
		if *maxSubflows < 1 || *maxSubflows > cc.MaxSubflowsTracked {
			return fmt.Errorf("--max-subflows %d: want 1 to %d", *maxSubflows, cc.MaxSubflowsTracked)
		}
		if *algo == "" {
			return cli.Usagef("--algo is required: one of %s", joinNames())
		}
		a, err := cc.Lookup(*algo)
		if err != nil {
			return err
		}
		if err := checkPinRoot(*root, true); err != nil {
			return err
		}
		opts := cc.Options{Name: *name, PinRoot: *root, Params: cc.Params{LISA: *lisa, RSFTarget: *target, Trace: *trace, Pacing: *pacing},
			MaxSubflows: uint32(*maxSubflows)}
		if err := cc.Load(a, opts); err != nil {
			return err
		}
		registered := *name
		if registered == "" {
			registered = a.DefaultName()
		}
		fmt.Fprintf(out, "%s registered (%s); use it with `sysctl net.ipv4.tcp_congestion_control=%s` or setsockopt(TCP_CONGESTION)\n", registered, a.Summary, registered)
		return nil
	}
}

func cmdUnload(fs *flag.FlagSet) cli.Action {
	algo := fs.String("algo", "", "algorithm loaded under its default name")
	name := fs.String("name", "", "registered name")
	root := pinRootFlag(fs)
	return func(_ []string, out io.Writer) error {
		target := *name
		if target == "" {
			if *algo == "" {
				return cli.Usagef("say what to unload: --algo NAME or --name CCNAME")
			}
			a, err := cc.Lookup(*algo)
			if err != nil {
				return err
			}
			target = a.DefaultName()
		} else if err := checkPinName(target); err != nil {
			return err
		}
		if err := checkPinRoot(*root, false); err != nil {
			return err
		}
		if err := cc.Unload(target, *root); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s unregistered; connections that use it keep it until they close\n", target)
		return nil
	}
}

// subflowCount is the live subflows the map holds and, when the map was
// ever full, how many more it could not hold.
func subflowCount(n int, untracked uint64) string {
	if untracked == 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d (%d more since load found the map full)", n, untracked)
}

func cmdList(fs *flag.FlagSet) cli.Action {
	asJSON := fs.Bool("json", false, "JSON output")
	root := pinRootFlag(fs)
	return func(_ []string, out io.Writer) error {
		if err := checkPinRoot(*root, false); err != nil {
			return err
		}
		snap, err := stats.Pinned{Root: *root}.Read()
		if err != nil {
			return needsRoot(err, *root)
		}
		loaded := snap.Loaded
		if *asJSON {
			type entry struct {
				Name        string  `json:"name"`
				Algo        string  `json:"algo"`
				LISA        bool    `json:"lisa"`
				RSFTargetMs float64 `json:"rsf_target_ms"`
				Trace       bool    `json:"trace"`
				Pacing      bool    `json:"pacing"`
				Subflows    int     `json:"subflows"`
				Untracked   uint64  `json:"untracked_subflows"`
				Registered  bool    `json:"registered"`
				PinDir      string  `json:"pin_dir"`
			}
			list := []entry{}
			for _, l := range loaded {
				list = append(list, entry{l.Name, l.Algo, l.Params.LISA, float64(l.Params.RSFTarget) / float64(time.Millisecond), l.Params.Trace, l.Params.Pacing, snap.Count(l.Name), l.Untracked, l.Registered, l.PinDir})
			}
			return cli.WriteJSON(out, list)
		}
		if len(loaded) == 0 {
			fmt.Fprintln(out, "nothing loaded; try `mptcp-cc load --algo olia`")
			return nil
		}
		t := cli.NewTable(out, "NAME", "ALGO", "PARAMETERS", "SUBFLOWS", "STATE")
		for _, l := range loaded {
			state := "registered"
			if !l.Registered {
				state = "NOT REGISTERED (stale pins: mptcp-cc unload --name " + l.Name + ")"
			}
			t.Row(l.Name, l.Algo, describeParams(l.Algo, l.Params), subflowCount(snap.Count(l.Name), l.Untracked), state)
		}
		return t.Flush()
	}
}

func describeParams(algo string, p cc.Params) string {
	s := fmt.Sprintf("lisa=%v", p.LISA)
	if algo == "rsf" {
		s += fmt.Sprintf(" target=%v", p.RSFTarget)
	}
	if p.Pacing {
		s += " pacing"
	}
	if p.Trace {
		s += " trace"
	}
	return s
}

func cmdAlgorithms(fs *flag.FlagSet) cli.Action {
	asJSON := fs.Bool("json", false, "JSON output")
	return func(_ []string, out io.Writer) error {
		if *asJSON {
			type entry struct {
				Algo        string `json:"algo"`
				KernelName  string `json:"kernel_name"`
				Coupled     string `json:"coupled_quantity"`
				Description string `json:"description"`
			}
			list := []entry{}
			for _, a := range cc.Algorithms() {
				list = append(list, entry{a.Name, a.DefaultName(), a.Coupled, a.Summary})
			}
			return cli.WriteJSON(out, list)
		}
		t := cli.NewTable(out, "ALGO", "KERNEL NAME", "COUPLED QUANTITY", "DESCRIPTION")
		for _, a := range cc.Algorithms() {
			t.Row(a.Name, a.DefaultName(), a.Coupled, a.Summary)
		}
		return t.Flush()
	}
}

// checkPinName refuses an --name that cannot be a congestion control (the
// kernel's limit is 15 characters) or that would name a path outside the
// pin root once joined to it (../x).
func checkPinName(name string) error {
	if len(name) > 15 || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("--name %q is not a congestion control name (1 to 15 characters, no '/'): `mptcp-cc list` shows the loaded ones", name)
	}
	return nil
}

func joinNames() string {
	s := ""
	for i, n := range cc.Names() {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
