// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/lab/bpfreno"
	"github.com/mptcp-cc/mptcp-cc/lab/integrity"
	"github.com/mptcp-cc/mptcp-cc/lab/runner"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
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
MPTCP transfers run on another network of their own meanwhile), wire (the
server's side captured, payloads included: each bad connection's segments
are checked against their DSS mappings, to tell a sender that mapped the
wrong bytes from a receiver that put right segments together wrong), late
(the server waits 5 ms between the header and the payload, so no reader
holds the connection while the join comes up).
docs/kernel-faults.md is the report made from it.`

func cmdIntegrity(fs *flag.FlagSet) cli.Action {
	conns := fs.Int("conns", 10000, "connections per arm")
	size := fs.String("size", "256KiB", "payload per connection, a `SIZE` such as 256KiB")
	parallel := fs.Int("parallel", 1, "connections at once (above 1, MIB counters are not tied to connections)")
	jsonOut := fs.String("json", "", "also write the report, every finding included, as JSON to this `FILE`")
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
		run := func() (rep integrity.Report, err error) {
			l := newCCLoader(s.id)
			defer func() { err = errors.Join(err, l.unload()) }()
			for i := range arms {
				if arms[i].CC, err = l.name(arms[i].CC, arms[i].Pacing); err != nil {
					return integrity.Report{}, err
				}
			}
			fmt.Fprintf(os.Stderr, "mptcp-lab: %d connections per arm, arms %v (run %s)\n", *conns, args, s.id)
			return integrity.Run(s.ctx, integrity.Options{Prefix: s.id.NSPrefix(), Arms: arms, Conns: *conns,
				Size: int(bytes), Parallel: *parallel, Progress: os.Stderr})
		}
		rep, err := run()
		return s.finish(err, rep, len(rep.Arms) > 0, stdout, *jsonOut)
	}
}

// finish ends a reproducer's session and, when it measured something,
// prints its report and writes it whole as JSON to jsonPath (if given).
func (s *session) finish(err error, rep interface{ WriteText(io.Writer) }, measured bool, stdout io.Writer, jsonPath string) error {
	err = errors.Join(err, s.close())
	if !measured {
		return err
	}
	rep.WriteText(stdout)
	if jsonPath != "" {
		f, ferr := os.Create(jsonPath)
		if ferr == nil {
			ferr = errors.Join(cli.WriteJSON(f, rep), f.Close())
		}
		err = errors.Join(err, ferr)
	}
	return err
}

// ccLoader loads, once each, the congestion controls of ours that arms
// name (lia, olia, balia, rsf, each with or without pacing) in the run's
// pin root, where CleanRun finds them, and registers the kernel's Reno
// through BPF (bpfreno) when an arm names it. The kernel's own CCs pass
// through.
type ccLoader struct {
	id     runner.RunID
	loaded map[string]string // algo[+pacing] -> registered name
	reno   *bpfreno.Reno
}

func newCCLoader(id runner.RunID) *ccLoader {
	return &ccLoader{id: id, loaded: map[string]string{}}
}

// name returns the registered name an arm's sockets ask for.
func (l *ccLoader) name(arm string, pacing bool) (string, error) {
	if arm == bpfRenoArm {
		if l.reno == nil {
			r, err := bpfreno.Register("l" + string(l.id) + "_breno")
			if err != nil {
				return "", err
			}
			l.reno = r
		}
		return l.reno.Name, nil
	}
	a, err := cc.Lookup(arm)
	if err != nil {
		return arm, nil // the kernel's own
	}
	key, name := a.Name, "l"+string(l.id)+"_"+a.Name
	if pacing {
		key, name = key+"+pacing", name+"p"
	}
	if l.loaded[key] == "" {
		if err := cc.Load(a, cc.Options{Name: name, PinRoot: l.id.PinRoot(), Params: cc.Params{Pacing: pacing}}); err != nil {
			return "", fmt.Errorf("loading %s as %s: %w", key, name, err)
		}
		l.loaded[key] = name
	}
	return l.loaded[key], nil
}

// unload removes what was loaded.
func (l *ccLoader) unload() error {
	var err error
	for _, name := range l.loaded {
		err = errors.Join(err, cc.Unload(name, l.id.PinRoot()))
	}
	if l.reno != nil {
		err = errors.Join(err, l.reno.Close())
	}
	return err
}

// bpfRenoArm is the arm name of the kernel's Reno through BPF struct_ops.
const bpfRenoArm = "bpfreno"
