package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/lab/integrity"
	"github.com/mptcp-cc/mptcp-cc/pkg/lab/runner"
	"github.com/mptcp-cc/mptcp-cc/pkg/lab/scenario"
)

// defaultArms are the arms of `make repro-kernel`: the kernel's own CCs,
// two of ours, and DSS checksums on.
var defaultArms = []string{"cubic", "reno", "bbr", "lia", "olia", "cubic+csum"}

const integrityHelp = `Runs many short MPTCP connections per arm over two unshaped veth paths
(offloads off, a join each), checks every byte against a seeded pattern, and
prints the rate of connections that delivered the right count of wrong
bytes, with its 95% interval, and where each one's wrong bytes had been sent.
An arm is a congestion control (a built-in one, or lia, olia, balia, rsf,
which are loaded for the run) with options, each after a '+': csum (DSS
checksums at both ends), nojoin (one subflow), offload (TSO/GSO/GRO on),
pacing (ours only: loaded with pacing on), close (the client closes as soon
as it has written, instead of waiting for the server's verdict), busy (bulk
MPTCP transfers run on another network of their own meanwhile).
docs/kernel-faults.md is the report made from it.`

func cmdIntegrity(fs *flag.FlagSet) cli.Action {
	conns := fs.Int("conns", 10000, "connections per arm")
	size := fs.String("size", "256KiB", "payload per connection")
	parallel := fs.Int("parallel", 1, "connections at once (above 1, MIB counters are not tied to connections)")
	jsonOut := fs.String("json", "", "also write the report, every finding included, as JSON to this file")
	noJanitor := fs.Bool("no-janitor", false, "do not start the janitor (tests)")
	return func(args []string, stdout io.Writer) error {
		if *conns < 1 {
			return fmt.Errorf("--conns %d: want 1 or more connections per arm", *conns)
		}
		if *parallel < 1 || *parallel > 256 {
			return fmt.Errorf("--parallel %d: want 1 to 256 connections at once", *parallel)
		}
		bytes, err := scenario.ParseSize(*size)
		if err != nil || bytes < 1024 || bytes > 1<<30 {
			return fmt.Errorf("--size %q: want a size from 1KiB to 1GiB, e.g. 256KiB", *size)
		}
		if len(args) == 0 {
			args = defaultArms
		}
		var arms []integrity.Arm
		for _, s := range args {
			a, err := integrity.ParseArm(s)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			if _, err := cc.Lookup(a.CC); err != nil && a.Pacing {
				return cli.Usagef("arm %q: pacing is a parameter of our congestion controls (%s); of the kernel's, bbr paces by itself", s, strings.Join(cc.Names(), ", "))
			}
			arms = append(arms, a)
		}
		s, err := newSession(*noJanitor)
		if err != nil {
			return err
		}
		run := func() (integrity.Report, error) {
			unload, err := loadArmCCs(s.id, arms)
			defer unload()
			if err != nil {
				return integrity.Report{}, err
			}
			fmt.Fprintf(os.Stderr, "mptcp-lab: %d connections per arm, arms %v (run %s)\n", *conns, args, s.id)
			return integrity.Run(s.ctx, integrity.Options{Prefix: s.id.NSPrefix(), Arms: arms, Conns: *conns,
				Size: int(bytes), Parallel: *parallel, Progress: os.Stderr})
		}
		rep, err := run()
		if cerr := s.close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		if len(rep.Arms) > 0 {
			rep.WriteText(stdout)
			if *jsonOut != "" {
				f, ferr := os.Create(*jsonOut)
				if ferr == nil {
					ferr = errors.Join(cli.WriteJSON(f, rep), f.Close())
				}
				err = errors.Join(err, ferr)
			}
		}
		return err
	}
}

// loadArmCCs loads our congestion controls the arms name, one per algorithm
// and pacing, in the run's pin root (where CleanRun finds them), and
// points the arms at them. unload removes what was loaded.
func loadArmCCs(id runner.RunID, arms []integrity.Arm) (unload func(), err error) {
	root := id.PinRoot()
	loaded := map[string]string{} // algo[+pacing] -> registered name
	unload = func() {
		for _, name := range loaded {
			_ = cc.Unload(name, root)
		}
	}
	for i, arm := range arms {
		a, err := cc.Lookup(arm.CC)
		if err != nil {
			continue // the kernel's own
		}
		key, name := a.Name, "l"+string(id)+"_"+a.Name
		if arm.Pacing {
			key, name = key+"+pacing", name+"p"
		}
		if loaded[key] == "" {
			if err := cc.Load(a, cc.Options{Name: name, PinRoot: root, Params: cc.Params{Pacing: arm.Pacing}}); err != nil {
				return unload, fmt.Errorf("loading %s as %s: %w", key, name, err)
			}
			loaded[key] = name
		}
		arms[i].CC = loaded[key]
	}
	return unload, nil
}
