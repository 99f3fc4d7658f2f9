// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

var loadHelp = `The algorithm may also be given as the argument: ` + "`mptcp-cc load olia`" + ` is
` + "`mptcp-cc load --algo olia`" + `. A parameter that the algorithm does not read is
refused: --rsf-target is read by ` + strings.Join(cc.UsedBy(cc.ParamRSFTarget), ", ") + ` alone.`

func cmdLoad(fs *flag.FlagSet) cli.Action {
	algo := fs.String("algo", "", "algorithm `NAME`: "+joinNames())
	name := fs.String("name", "", "`CCNAME` to register under, 1 to 15 characters (default mptcp_ALGO)")
	lisa := fs.Bool("lisa", false, "LISA linked slow start for joining subflows")
	target := fs.Duration("rsf-target", cc.DefaultRSFTarget, "target queueing delay d (only "+strings.Join(cc.UsedBy(cc.ParamRSFTarget), ", ")+" reads it)")
	trace := fs.Bool("trace", false, "record every decision in the trace ring buffer (for debugging and tests)")
	pacing := fs.Bool("pacing", false, "pace each subflow at about its window per RTT (the kernel's TCP pacing) instead of sending in bursts")
	maxSubflows := fs.Uint("max-subflows", cc.MaxSubflowsTracked, "live subflows the readers can see (list, subflows, top, metrics); more still run the algorithm, counted as untracked")
	allow := fs.Bool("allow", false, "also add it to net.ipv4.tcp_allowed_congestion_control, so that network namespaces other than the host's may make it their default (the kernel refuses them with EPERM otherwise)")
	root := pinRootFlag(fs)
	return func(pos []string, out io.Writer) error {
		if *maxSubflows < 1 || *maxSubflows > cc.MaxSubflowsTracked {
			return fmt.Errorf("--max-subflows %d: want 1 to %d", *maxSubflows, cc.MaxSubflowsTracked)
		}
		a, err := algoArg(*algo, pos)
		if err != nil {
			return err
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		params, err := cc.ParseParams(cc.ParamInput{Algo: a.Name, LISA: *lisa, Trace: *trace, Pacing: *pacing,
			RSFTarget: *target, RSFTargetSet: set["rsf-target"]})
		if err != nil {
			return paramFlagError(err)
		}
		if err := checkPinRoot(*root, true); err != nil {
			return err
		}
		opts := cc.Options{Name: *name, PinRoot: *root, Params: params, MaxSubflows: uint32(*maxSubflows)}
		if err := cc.Load(a, opts); err != nil {
			return err
		}
		registered := *name
		if registered == "" {
			registered = a.DefaultName()
		}
		if *allow {
			if err := kernel.AllowCongestionControl(registered); err != nil {
				return fmt.Errorf("%s is registered, but: %w", registered, err)
			}
		}
		fmt.Fprintf(out, loadedMessage, registered, a.Summary, registered, registered, registered)
		return nil
	}
}

// loadedMessage says how to give the loaded CC to connections, the
// narrowest way first: a host-wide default moves every plain TCP socket to
// it too (docs/policy.md).
const loadedMessage = `%s registered (%s). Give it to MPTCP connections:
  per cgroup (recommended): mptcp-cc policy attach --cgroup CGROUP --algo %s
  per socket:               setsockopt(fd, SOL_TCP, TCP_CONGESTION, "%s") on the MPTCP socket
  host-wide default:        sysctl net.ipv4.tcp_congestion_control=%s  (plain TCP sockets get it too)
`

const unloadHelp = `The algorithm may also be given as the argument: ` + "`mptcp-cc unload olia`" + ` is
` + "`mptcp-cc unload --algo olia`" + `. It refuses while a network namespace has
it as its default congestion control (new TCP sockets there would get an
unregistered CC) or live subflows run it, and says which; --force unloads
anyway (those subflows keep it until they close).`

func cmdUnload(fs *flag.FlagSet) cli.Action {
	algo := fs.String("algo", "", "algorithm `NAME` loaded under its default name (mptcp_NAME)")
	name := fs.String("name", "", "registered `CCNAME` (`mptcp-cc list` shows them)")
	force := fs.Bool("force", false, "unload even while a namespace's default names it or live subflows run it")
	root := pinRootFlag(fs)
	return func(pos []string, out io.Writer) error {
		target := *name
		if target != "" && len(pos) > 0 {
			return cli.Usagef("unexpected argument %q: --name says what to unload", strings.Join(pos, " "))
		}
		if target == "" {
			algoName, err := oneName("algo", *algo, pos)
			if err != nil {
				return err
			}
			if algoName == "" {
				return cli.Usagef("say what to unload: --algo NAME or --name CCNAME")
			}
			a, err := cc.Lookup(algoName)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			target = a.DefaultName()
		} else if err := checkPinName(target); err != nil {
			return err
		}
		if err := checkPinRoot(*root, false); err != nil {
			return err
		}
		users, err := cc.UsersOf(target, *root)
		if errors.Is(err, kernel.ErrNotRoot) {
			return err
		}
		if err != nil && !*force {
			return fmt.Errorf("%s: %w", target, err)
		}
		if !users.None() && !*force {
			return fmt.Errorf("%s is in use: %s. Set another default first (sysctl -w net.ipv4.tcp_congestion_control=cubic, in each namespace named), or unload with --force", target, users)
		}
		if err := cc.Unload(target, *root); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s unregistered; connections that use it keep it until they close\n", target)
		if !users.None() {
			fmt.Fprintf(out, "left behind (--force): %s\n", users)
		}
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
				// Build is what loaded it (null: a version that recorded
				// none); Current, whether that is this binary.
				Build   *structops.Build `json:"build"`
				Current bool             `json:"current"`
				// PreviousBuild: live subflows that still run the build
				// an upgrade replaced.
				PreviousBuild int `json:"previous_build_subflows"`
			}
			list := []entry{}
			for _, l := range loaded {
				var b *structops.Build
				if l.BuildRecorded {
					b = &l.Build
				}
				list = append(list, entry{l.Name, l.Algo, l.Params.LISA, float64(l.Params.RSFTarget) / float64(time.Millisecond), l.Params.Trace, l.Params.Pacing, snap.Count(l.Name), l.Untracked, l.Registered, l.PinDir,
					b, l.Current(), previousBuild(snap.Subflows, l)})
			}
			return cli.WriteJSON(out, list)
		}
		if len(loaded) == 0 {
			fmt.Fprintln(out, "nothing loaded; try `mptcp-cc load --algo olia`")
			return nil
		}
		t := cli.NewTable(out, "NAME", "ALGO", "PARAMETERS", "SUBFLOWS", "STATE", "BUILD")
		for _, l := range loaded {
			state := "registered"
			if !l.Registered {
				state = "NOT REGISTERED (stale pins: mptcp-cc unload --name " + l.Name + ")"
			}
			t.Row(l.Name, l.Algo, describeParams(l.Algo, l.Params), subflowCount(snap.Count(l.Name), l.Untracked), state, describeBuild(l.Build, l.BuildRecorded, " in place", previousBuild(snap.Subflows, l), "mptcp-cc upgrade"))
		}
		return t.Flush()
	}
}

// previousBuild counts l's live subflows that an earlier build created:
// connections opened before an upgrade, which keep its programs.
func previousBuild(subflows []stats.Subflow, l cc.Loaded) int {
	n := 0
	for _, s := range subflows {
		if s.CC == l.Name && cc.Generation(s.ID) < l.Build.Generation {
			n++
		}
	}
	return n
}

// describeBuild is list's and sched list's BUILD column: the version that
// loaded a registration, how many times it was upgraded (how: "in place"
// for the CCs), how many of its live subflows still run the previous
// build, and upgrade, the command to run when it is not this binary's.
func describeBuild(b structops.Build, recorded bool, how string, previous int, upgrade string) string {
	if !recorded {
		return "unrecorded (mptcp-cc 0.1.0 or earlier): " + upgrade
	}
	s := b.Version
	if b.Generation > 0 {
		s += fmt.Sprintf(" (upgraded%s %d times", how, b.Generation)
		if previous > 0 {
			s += fmt.Sprintf("; %d subflows still on the previous build", previous)
		}
		s += ")"
	}
	if !structops.Current(b, recorded) {
		s += ": not this binary's build, " + upgrade
	}
	return s
}

const upgradeHelp = `Replaces the programs of loaded algorithms with this binary's build, in
place: the name stays registered, connections opened from then on run the
new build, and connections already open keep the programs they run until
they close. The subflows map, the parameters and the trace are kept, so
list, top and the metrics go on without a gap. Without --name, every
algorithm under --bpffs whose build is not this binary's is upgraded.
It needs Linux 6.4 or newer (a struct_ops link updated in place) and a
build whose maps have the same layout (ABI); where the layout changed it
refuses: unload and load then.`

func cmdUpgrade(fs *flag.FlagSet) cli.Action {
	var names stringList
	fs.Var(&names, "name", "registered `CCNAME` to upgrade (repeatable; default: every loaded one)")
	force := fs.Bool("force", false, "replace the programs even where they already are this binary's build")
	asJSON := fs.Bool("json", false, "JSON output")
	root := pinRootFlag(fs)
	return func(_ []string, out io.Writer) error {
		registered := func() ([]string, error) {
			loaded, err := cc.List(*root)
			var names []string
			for _, l := range loaded {
				if l.Registered {
					names = append(names, l.Name)
				}
			}
			return names, err
		}
		upgrade := func(name string) (cc.Upgraded, error) { return cc.Upgrade(name, *root, *force) }
		describe := func(u cc.Upgraded) string { return upgradeLine(u.Name, u.From, u.To, u.Recorded, u.Skipped) }
		return upgradeAll(out, *root, names, *asJSON, "mptcp-cc list", checkPinName, registered, upgrade, describe)
	}
}

// upgradeAll is what upgrade and sched upgrade do: check the pin root and
// the names, upgrade each of names (none: every registered one under
// root), and print what each did (describe) or the JSON of it; the
// failures are the error, after what succeeded is printed.
func upgradeAll[U any](out io.Writer, root string, names []string, asJSON bool, listCmd string, checkName func(string) error,
	registered func() ([]string, error), upgrade func(string) (U, error), describe func(U) string) error {
	if err := checkPinRoot(root, false); err != nil {
		return err
	}
	for _, n := range names {
		if err := checkName(n); err != nil {
			return err
		}
	}
	if len(names) == 0 {
		var err error
		if names, err = registered(); err != nil {
			return needsRoot(err, root)
		}
		if len(names) == 0 {
			return fmt.Errorf("nothing loaded under %s to upgrade: `%s` shows what is", root, listCmd)
		}
	}
	done := []U{}
	var failed []string
	for _, n := range names {
		u, err := upgrade(n)
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		done = append(done, u)
	}
	if asJSON {
		if err := cli.WriteJSON(out, done); err != nil {
			return err
		}
	} else {
		for _, u := range done {
			fmt.Fprintln(out, describe(u))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return nil
}

// upgradeLine says what an upgrade of name did.
func upgradeLine(name string, from, to structops.Build, recorded, skipped bool) string {
	if skipped {
		return fmt.Sprintf("%s: already this build (%s); --force replaces it anyway", name, to.Version)
	}
	was := "an unrecorded build"
	if recorded {
		was = from.Version
	}
	return fmt.Sprintf("%s: %s -> %s (generation %d); connections already open keep %s until they close", name, was, to.Version, to.Generation, was)
}

func describeParams(algo string, p cc.Params) string {
	s := fmt.Sprintf("lisa=%v", p.LISA)
	if a, err := cc.Lookup(algo); err == nil && a.ReadsParam(cc.ParamRSFTarget) {
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

// oneName is a name given as --flag or as the one positional argument
// (`load olia` is `load --algo olia`); both, naming two, is a usage error.
func oneName(flagName, flagValue string, pos []string) (string, error) {
	switch {
	case len(pos) > 1:
		return "", cli.Usagef("unexpected argument %q: one at a time", strings.Join(pos[1:], " "))
	case len(pos) == 0:
		return flagValue, nil
	case flagValue != "" && flagValue != pos[0]:
		return "", cli.Usagef("%q and --%s %s are two names: give one", pos[0], flagName, flagValue)
	}
	return pos[0], nil
}

// paramFlagError says what cc.ParseParams refused in terms of load's
// flags: a parameter the algorithm does not read is a usage error.
func paramFlagError(err error) error {
	var pe *cc.ParamError
	if !errors.As(err, &pe) {
		return err
	}
	flagName := "--" + strings.ReplaceAll(string(pe.Param), "_", "-")
	if pe.Unread {
		return cli.Usagef("%s is %s", flagName, pe.Msg)
	}
	return fmt.Errorf("%s %s", flagName, pe.Msg)
}

// algoArg is the algorithm load was given (--algo NAME or NAME).
func algoArg(algo string, pos []string) (cc.Algorithm, error) {
	name, err := oneName("algo", algo, pos)
	if err != nil {
		return cc.Algorithm{}, err
	}
	if name == "" {
		return cc.Algorithm{}, cli.Usagef("--algo is required: one of %s", joinNames())
	}
	a, err := cc.Lookup(name)
	if err != nil {
		return cc.Algorithm{}, cli.Usagef("%v", err)
	}
	return a, nil
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
