// SPDX-License-Identifier: Apache-2.0

// mptcp-lab runs experiments on emulated multipath networks with real
// kernel MPTCP (lab/). It only turns flags into calls of lab/, and
// makes sure a run leaves nothing behind however it ends:
//
//   - Ctrl-C / SIGTERM / SIGHUP: the run stops, removes its namespaces,
//     unloads its congestion controls and writes the results it has; a
//     second signal exits at once and leaves the cleanup to the janitor.
//   - SIGKILL, a crash, or the second signal: a janitor process, started
//     with every run in its own session and holding the read end of a pipe
//     whose write end only the run holds, sees end-of-file when the run
//     dies and removes what the run left (runner.CleanRun).
//   - If the janitor is killed too (e.g. `kill -9` of both, or a reboot of
//     bpffs-less state), `mptcp-lab clean` removes the leftovers of every
//     run whose process is gone, found by name (mplab-<id>-* namespaces,
//     /sys/fs/bpf/mptcp-lab/<id> pins, /run/mptcp-lab/<id> records).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	labreport "github.com/mptcp-cc/mptcp-cc/lab/report"
	"github.com/mptcp-cc/mptcp-cc/lab/runner"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
)

var app = (&cli.App{
	Name:    "mptcp-lab",
	Summary: "experiments on emulated multipath networks with real kernel MPTCP",
	Commands: []cli.Command{
		{Name: "run", Summary: "run scenario files and write results (CSV, JSON, SVG)",
			Args: "FILE...", Flags: cmdRun},
		{Name: "up", Summary: "build a scenario's network and keep it until interrupted",
			Args: "FILE", Flags: cmdUp},
		{Name: "validate", Summary: "check scenario files and list their cases", Args: "FILE...", Flags: cmdValidate},
		{Name: "clean", Summary: "remove what killed runs left behind", Flags: cmdClean},
		{Name: "summarize", Summary: "rebuild a scenario's summary and charts from its raw results",
			Args: "DIR/SCENARIO...", Flags: cmdSummarize},
		{Name: "paths", Summary: "a connection's bytes, queues and rate share per path before and after a moment (a competing flow's start)",
			Args: "DIR/SCENARIO...", Flags: cmdPaths},
		{Name: "report", Summary: "tables and charts of results next to the paper's numbers",
			Args: "SPEC.yaml...", Flags: cmdReport},
		{Name: "integrity", Summary: "measure how often MPTCP connections deliver wrong bytes, per congestion control",
			Args: "[ARM...]", Help: integrityHelp, Values: defaultArms, Flags: cmdIntegrity},
		{Name: "ssthresh", Summary: "measure how often an implausible ssthresh appears, per congestion control, MPTCP or TCP",
			Args: "[ARM...]", Help: ssthreshHelp, Values: ssthreshArms, Flags: cmdSsthresh},
		{Name: janitorCmd, Hidden: true, Positional: true, Flags: func(*flag.FlagSet) cli.Action {
			return func(args []string, _ io.Writer) error { janitor(args); return nil }
		}},
	},
	Footer: "docs/lab.md describes the scenario format.",
}).WithDocs()

// errInterrupted makes main exit with 130, as shells do after Ctrl-C.
var errInterrupted = cli.ErrInterrupted

func main() { app.Main() }

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// session is what every command that builds something shares: a run id,
// signal handling and the janitor.
type session struct {
	id     runner.RunID
	ctx    context.Context
	cancel context.CancelFunc
	stopJ  func()
}

func newSession(noJanitor bool) (*session, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root (network namespaces, BPF): run it with sudo")
	}
	id, err := runner.NewRunID()
	if err != nil {
		return nil, fmt.Errorf("recording the run: %w", err)
	}
	s := &session{id: id, stopJ: func() {}}
	if !noJanitor {
		stop, err := startJanitor(id)
		if err != nil {
			id.Release()
			return nil, fmt.Errorf("starting the janitor: %w", err)
		}
		s.stopJ = stop
	}
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go func() {
		sig := <-sigc
		fmt.Fprintf(os.Stderr, "mptcp-lab: %v: stopping and cleaning up (again to quit at once)\n", sig)
		s.cancel()
		<-sigc
		fmt.Fprintf(os.Stderr, "mptcp-lab: quitting; the janitor removes what is left\n")
		os.Exit(130)
	}()
	return s, nil
}

// close ends a session whose command cleaned up after itself: it checks
// that nothing of the run is left (removing it if so) and dismisses the
// janitor.
func (s *session) close() error {
	c, err := runner.CleanRun(s.id)
	if len(c.Namespaces)+len(c.CCs) > 0 {
		err = errors.Join(err, fmt.Errorf("run %s left %v %v behind (removed now)", s.id, c.Namespaces, c.CCs))
	}
	s.stopJ()
	return err
}

func cmdRun(fs *flag.FlagSet) cli.Action {
	out := fs.String("out", "lab-results", "results `DIR` (each scenario writes DIR/<scenario name>/)")
	reps := fs.Int("reps", 0, "repetitions of every case (default: the file's)")
	var cases multiFlag
	fs.Var(&cases, "case", "run only this case `ID` or variant (repeatable)")
	quiet := fs.Bool("quiet", false, "no progress lines")
	noJanitor := fs.Bool("no-janitor", false, "do not start the janitor (tests of `mptcp-lab clean`)")
	return func(files []string, _ io.Writer) error {
		if len(files) == 0 {
			return cli.Usagef("no scenario file")
		}
		if *reps < 0 {
			return fmt.Errorf("--reps %d: want a number of repetitions, 1 or more (0, the default: the file's)", *reps)
		}
		var loaded []*scenario.File
		for _, p := range files {
			f, err := scenario.Load(p)
			if err != nil {
				return err
			}
			loaded = append(loaded, f)
		}
		s, err := newSession(*noJanitor)
		if err != nil {
			return err
		}
		var logw io.Writer = os.Stderr
		if *quiet {
			logw = nil
		}
		var runErr error
		for _, f := range loaded {
			fmt.Fprintf(os.Stderr, "mptcp-lab: running %s (run %s), results in %s/%s\n", f.Path, s.id, *out, f.Name)
			sum, err := runner.Run(s.ctx, f, runner.Options{Out: *out, Reps: *reps, Cases: cases, ID: s.id, Log: logw,
				Command: strings.Join(os.Args, " ")})
			if sum != nil {
				fmt.Fprintf(os.Stderr, "mptcp-lab: %s done in %.0f s: %s/%s/summary.json\n", f.Name, sum.Seconds, *out, f.Name)
			}
			if err != nil {
				runErr = errors.Join(runErr, fmt.Errorf("%s: %w", f.Path, err))
			}
			if s.ctx.Err() != nil {
				break
			}
		}
		if err := s.close(); err != nil {
			runErr = errors.Join(runErr, err)
		}
		if s.ctx.Err() != nil {
			return errors.Join(runErr, errInterrupted)
		}
		return runErr
	}
}

func cmdUp(fs *flag.FlagSet) cli.Action {
	caseID := fs.String("case", "", "which case `ID` (variant) to build (default: the first)")
	return func(pos []string, _ io.Writer) error {
		if len(pos) != 1 {
			return cli.Usagef("want one scenario file")
		}
		f, err := scenario.Load(pos[0])
		if err != nil {
			return err
		}
		s, err := newSession(false)
		if err != nil {
			return err
		}
		err = runner.Up(s.ctx, f, *caseID, s.id, func(u *runner.UpInfo) {
			n := u.Net
			fmt.Printf("case %s of %s is up (run %s); Ctrl-C removes it.\n\n", u.Case, f.Path, s.id)
			fmt.Println("namespaces:")
			for h, insts := range n.Hosts {
				for i, ns := range insts {
					var addrs []string
					for p := range u.Scenario.Hosts[h].Paths {
						addrs = append(addrs, n.HostAddr(h, i, p).String())
					}
					fmt.Printf("  host   %-14s %-28s paths %s\n", fmt.Sprintf("%s[%d]", u.Scenario.Hosts[h].Name, i), ns, strings.Join(addrs, " "))
				}
			}
			fmt.Printf("  router access %s, core %s\n", n.RouterA, n.RouterC)
			for m, ns := range n.Servers {
				fmt.Printf("  server %-14s %-28s address %s, xfer sink on %s\n", u.Scenario.Servers[m].Name, ns, n.ServerAddr(m), u.Sinks[m])
			}
			if len(u.CCs) > 0 {
				fmt.Println("\ncongestion controls loaded:")
				for _, c := range u.CCs {
					fmt.Printf("  %-16s %s\n", c.Name, c.Spec)
				}
			}
			fmt.Println("\nthe scenario's flows, by hand:")
			for _, c := range u.Commands {
				fmt.Println("  " + c)
			}
		})
		if cerr := s.close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return err
	}
}

// validated is one scenario file as `validate --json` lists it.
type validated struct {
	File  string `json:"file"`
	Name  string `json:"name,omitempty"`
	Error string `json:"error,omitempty"`
	Cases []struct {
		ID          string   `json:"id"`
		Repetitions int      `json:"repetitions"`
		Flows       []string `json:"flows"`
	} `json:"cases,omitempty"`
}

func cmdValidate(fs *flag.FlagSet) cli.Action {
	asJSON := fs.Bool("json", false, "JSON output: one object per file")
	return func(pos []string, out io.Writer) error {
		if len(pos) == 0 {
			return cli.Usagef("no scenario file")
		}
		var errs []error
		var list []validated
		for _, p := range pos {
			v := validate(p)
			if v.Error != "" {
				errs = append(errs, errors.New(v.Error))
			}
			list = append(list, v)
		}
		if *asJSON {
			if err := cli.WriteJSON(out, list); err != nil {
				return err
			}
			return errors.Join(errs...)
		}
		for _, v := range list {
			if v.Error != "" {
				continue
			}
			reps := 0
			for _, c := range v.Cases {
				reps += c.Repetitions
			}
			fmt.Fprintf(out, "%s: %s, %d case(s), %d repetition(s) in all\n", v.File, v.Name, len(v.Cases), reps)
			for _, c := range v.Cases {
				fmt.Fprintf(out, "  %-28s %s\n", c.ID, strings.Join(c.Flows, "; "))
			}
		}
		return errors.Join(errs...)
	}
}

func validate(path string) validated {
	v := validated{File: path}
	f, err := scenario.Load(path)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.Name = f.Name
	v.Cases = make([]struct {
		ID          string   `json:"id"`
		Repetitions int      `json:"repetitions"`
		Flows       []string `json:"flows"`
	}, len(f.Cases))
	for i, c := range f.Cases {
		v.Cases[i].ID, v.Cases[i].Repetitions = c.ID, c.Scenario.Repetitions
		for _, x := range c.Scenario.Flows {
			n := x.Count * c.Scenario.Hosts[x.Host].Count
			what := scenario.FormatSize(x.Bytes)
			if x.Duration > 0 {
				what = x.Duration.String()
			}
			v.Cases[i].Flows = append(v.Cases[i].Flows, fmt.Sprintf("%s: %dx %s %s %s via %s", x.Name, n, x.Protocol(), x.CC, what, x.Tool))
		}
	}
	return v
}

func cmdClean(fs *flag.FlagSet) cli.Action {
	run := fs.String("run", "", "clean only this run `ID` (`mptcp-lab clean --list` shows them)")
	force := fs.Bool("force", false, "also clean runs whose process is still alive")
	list := fs.Bool("list", false, "only list what is there")
	asJSON := fs.Bool("json", false, "JSON output (with --list)")
	return func(_ []string, _ io.Writer) error {
		if *list {
			ids, err := runner.Leftovers()
			if err != nil {
				return err
			}
			if *asJSON {
				type leftover struct {
					Run   string `json:"run"`
					Alive bool   `json:"owner_alive"`
				}
				l := []leftover{}
				for id, alive := range ids {
					l = append(l, leftover{string(id), alive})
				}
				sort.Slice(l, func(i, j int) bool { return l[i].Run < l[j].Run })
				return cli.WriteJSON(os.Stdout, l)
			}
			for id, alive := range ids {
				state := "owner gone"
				if alive {
					state = "running"
				}
				fmt.Printf("%s  %s\n", id, state)
			}
			return nil
		}
		if *run != "" {
			if err := runner.RunID(*run).Check(); err != nil {
				return err
			}
			c, err := runner.CleanRun(runner.RunID(*run))
			report(c)
			return err
		}
		cs, err := runner.Clean(*force)
		for _, c := range cs {
			report(c)
		}
		if len(cs) == 0 {
			fmt.Println("nothing to clean")
		}
		return err
	}
}

func report(c runner.Cleaned) {
	fmt.Printf("run %s: removed %d namespace(s) %v, %d congestion control(s) %v\n", c.Run, len(c.Namespaces), c.Namespaces, len(c.CCs), c.CCs)
}

func cmdSummarize(fs *flag.FlagSet) cli.Action {
	return func(pos []string, _ io.Writer) error {
		if len(pos) == 0 {
			return cli.Usagef("no results directory (what `run --out DIR` wrote: DIR/<scenario name>)")
		}
		var errs []error
		for _, d := range pos {
			s, err := labreport.Summarize(d)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", d, err))
				continue
			}
			ex := 0
			for _, c := range s.Cases {
				ex += len(c.Excluded)
			}
			fmt.Printf("%s: %d case(s), %d repetition(s) left out for anomalies\n", d, len(s.Cases), ex)
		}
		return errors.Join(errs...)
	}
}

func cmdPaths(fs *flag.FlagSet) cli.Action {
	flow := fs.String("flow", "", "the multipath flow instance `NAME` (as in flows.csv, e.g. mp)")
	path := fs.String("path", "", "the `LINK` whose share is measured (subflows.csv's path column)")
	at := fs.Duration("at", 0, "the moment `D` into the repetition (e.g. 10s, when the competing flow starts)")
	before := fs.String("before", "", "the window `FROM-TO` before it, e.g. 5s-10s")
	after := fs.String("after", "", "the window `FROM-TO` after it, e.g. 15s-30s")
	return func(pos []string, w io.Writer) error {
		if len(pos) == 0 {
			return cli.Usagef("no results directory (what `run --out DIR` wrote: DIR/<scenario name>)")
		}
		if *flow == "" || *path == "" || *at <= 0 {
			return cli.Usagef("--flow, --path and --at are required (e.g. --flow mp --path b --at 10s --before 5s-10s --after 15s-30s)")
		}
		sp := labreport.ShiftSpec{Flow: *flow, Path: *path, At: at.Seconds()}
		var err error
		if sp.Before, err = parseWindow("before", *before); err != nil {
			return err
		}
		if sp.After, err = parseWindow("after", *after); err != nil {
			return err
		}
		for _, d := range pos {
			shifts, err := labreport.PathShifts(d, sp)
			if err != nil {
				return fmt.Errorf("%s: %w", d, err)
			}
			if len(pos) > 1 {
				fmt.Fprintf(w, "%s\n\n", d)
			}
			if err := labreport.WritePathShifts(w, sp, shifts); err != nil {
				return err
			}
		}
		return nil
	}
}

// parseWindow reads "5s-10s".
func parseWindow(flag, s string) (labreport.Window, error) {
	from, to, ok := strings.Cut(s, "-")
	var a, b time.Duration
	var err error
	if ok {
		if a, err = time.ParseDuration(from); err == nil {
			b, err = time.ParseDuration(to)
		}
	}
	if !ok || err != nil || a < 0 || b <= a {
		return labreport.Window{}, fmt.Errorf("--%s %q: want a window FROM-TO of durations into the repetition, FROM before TO (e.g. 5s-10s)", flag, s)
	}
	return labreport.Window{From: a.Seconds(), To: b.Seconds()}, nil
}

func cmdReport(fs *flag.FlagSet) cli.Action {
	results := fs.String("results", "lab-results", "`DIR` where `mptcp-lab run --out` wrote the results")
	return func(pos []string, _ io.Writer) error {
		if len(pos) == 0 {
			return cli.Usagef("no report spec")
		}
		var errs []error
		for _, p := range pos {
			written, err := labreport.Report(p, *results)
			for _, w := range written {
				fmt.Println("wrote " + w)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
			}
		}
		return errors.Join(errs...)
	}
}

// ---- janitor ----

const janitorCmd = "__janitor"

// startJanitor starts `mptcp-lab __janitor ID` in its own session with the
// read end of a pipe. stop tells it the run cleaned up by itself.
func startJanitor(id runner.RunID) (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, janitorCmd, string(id))
	cmd.ExtraFiles = []*os.File{r}
	cmd.Stderr = os.Stderr
	// Its own session: Ctrl-C in a terminal, or a kill of the run's process
	// group, must not take the janitor down with the run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	r.Close()
	return func() {
		_, _ = w.Write([]byte("done"))
		w.Close()
		_ = cmd.Wait()
	}, nil
}

// janitor waits for its run to end. "done" means the run cleaned up; plain
// end-of-file means it died, and the janitor cleans in its place.
func janitor(args []string) {
	if len(args) != 1 {
		os.Exit(2)
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM)
	pipe := os.NewFile(3, "run")
	b, _ := io.ReadAll(pipe)
	if string(b) == "done" {
		return
	}
	c, err := runner.CleanRun(runner.RunID(args[0]))
	fmt.Fprintf(os.Stderr, "mptcp-lab janitor: run %s ended without cleaning up; removed %d namespace(s), %d congestion control(s)\n",
		args[0], len(c.Namespaces), len(c.CCs))
	if err != nil {
		fmt.Fprintf(os.Stderr, "mptcp-lab janitor: %v\n", err)
		os.Exit(1)
	}
}
