// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// schedHelp and schedLoadHelp say first what sched.Experimental says.
const schedHelp = `Experimental: needs a kernel with the BPF MPTCP scheduler hook
(mptcp_net-next's export branch), which no released Linux has (checked
through 7.3); ` + "`mptcp-cc version`" + ` says whether this kernel has it. Without it
` + "`sched load`" + ` refuses, naming what is missing, and ` + "`sched list`" + ` and
` + "`sched use`" + ` work with the kernel's own schedulers only.

A packet scheduler decides which subflow of an MPTCP connection sends the
next data. The kernel offers those in net.mptcp.available_schedulers
("default" is its own) and gives new connections of a network namespace the
one net.mptcp.scheduler names.`

// schedRootFlag is where the schedulers are pinned (flag name: bpffs for
// the sched commands, sched-bpffs beside another root).
func schedRootFlag(fs *flag.FlagSet, name string) *string {
	def := os.Getenv("MPTCP_CC_SCHED_BPFFS")
	if def == "" {
		def = sched.DefaultPinRoot
	}
	return fs.String(name, def, "bpffs `DIR` for the packet schedulers' pins (env MPTCP_CC_SCHED_BPFFS)")
}

// schedName takes the one positional argument of a sched command.
func schedName(args []string, what string) (string, error) {
	switch len(args) {
	case 0:
		return "", cli.Usagef("say which scheduler: %s", what)
	case 1:
		return args[0], nil
	}
	return "", cli.Usagef("unexpected argument %q: one scheduler at a time", strings.Join(args[1:], " "))
}

// schedArgs is the repeatable --arg INDEX=VALUE.
type schedArgs struct {
	v   [6]uint32
	set [6]bool
}

func (a *schedArgs) String() string {
	var parts []string
	for i, ok := range a.set {
		if ok {
			parts = append(parts, fmt.Sprintf("%d=%d", i, a.v[i]))
		}
	}
	return strings.Join(parts, ",")
}

func (a *schedArgs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	i, err := strconv.ParseUint(k, 10, 8)
	if !ok || err != nil || i >= uint64(len(a.v)) {
		return fmt.Errorf("want INDEX=VALUE with INDEX 0 to %d (the tunables `mptcp-cc sched load -h` lists), e.g. 0=2", len(a.v)-1)
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return fmt.Errorf("tunable %d: %q is not a number from 0 to 4294967295 (0 keeps the scheduler's default)", i, v)
	}
	if a.set[i] {
		return fmt.Errorf("tunable %d is given twice", i)
	}
	a.v[i], a.set[i] = uint32(n), true
	return nil
}

const schedLoadHelp = `Experimental: needs a kernel with the BPF MPTCP scheduler hook
(mptcp_net-next's export branch); ` + "`mptcp-cc version`" + ` says whether this one has it.

The scheduler may also be given as the argument:
` + "`mptcp-cc sched load minrtt`" + ` is ` + "`mptcp-cc sched load --algo minrtt`" + `.

Tunables, --arg INDEX=VALUE (0 keeps the default; docs/schedulers.md and
bpf/sched/NAME.bpf.c explain them):
  rr     0: packets per turn (default 1)
  blest  0: lambda, in hundredths (default 120 = 1.2)
  daps   0: k, one-way share of the srtt gap, in 1/1024 (default 512)
  papd   0: congestion-avoidance period, in RTT_max (default 4)
         1: multipath wins at rate >= best * arg1 / 1024 (default 1024)
         2: best-path periods between multipath re-probes (default 8)
  weighted
         0: weight of a subflow whose endpoint has none below (default 1)
         1-5: weight of MPTCP endpoint 1-5 (` + "`ip mptcp endpoint show`" + `; default arg0)
  minrtt, redundant and ecf have none.`

func cmdSchedLoad(fs *flag.FlagSet) cli.Action {
	algo := fs.String("algo", "", "scheduler `NAME`: "+strings.Join(sched.Names(), ", "))
	name := fs.String("name", "", "`NAME` to register under, 1 to 15 characters of a-z, 0-9, '_' and '-' (default: the scheduler's own)")
	trace := fs.Bool("trace", false, "record every decision in the trace ring buffer (for debugging and tests)")
	var args schedArgs
	fs.Var(&args, "arg", "set a tunable: `INDEX=VALUE`, INDEX 0 to 5 (the tunables this help lists above), 0 keeps its default (repeatable)")
	root := schedRootFlag(fs, "bpffs")
	return func(pos []string, out io.Writer) error {
		algoName, err := oneName("algo", *algo, pos)
		if err != nil {
			return err
		}
		if algoName == "" {
			return cli.Usagef("--algo is required: one of %s", strings.Join(sched.Names(), ", "))
		}
		a, err := sched.Lookup(algoName)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		if err := checkPinRoot(*root, true); err != nil {
			return err
		}
		if err := sched.Load(a, sched.Options{Name: *name, PinRoot: *root, Params: sched.Params{Trace: *trace, Args: args.v}}); err != nil {
			return err
		}
		registered := *name
		if registered == "" {
			registered = a.Name
		}
		fmt.Fprintf(out, "%s registered (%s); give it to new MPTCP connections with `mptcp-cc sched use %s [--netns NAME]`\n", registered, a.Summary, registered)
		return nil
	}
}

const schedUnloadHelp = `The name it was loaded under may also be given as the argument:
` + "`mptcp-cc sched unload minrtt`" + ` is ` + "`mptcp-cc sched unload --name minrtt`" + `,
which is ` + "`--algo minrtt`" + ` when it was loaded under its own name.`

func cmdSchedUnload(fs *flag.FlagSet) cli.Action {
	algo := fs.String("algo", "", "scheduler `NAME` loaded under its own name")
	nameFlag := fs.String("name", "", "registered `NAME` (`mptcp-cc sched list` shows them)")
	root := schedRootFlag(fs, "bpffs")
	return func(pos []string, out io.Writer) error {
		name, err := oneName("name", *nameFlag, pos)
		if err != nil {
			return err
		}
		switch {
		case name != "" && *algo != "" && name != *algo:
			return cli.Usagef("--algo %s and %s are two names: give one", *algo, name)
		case name == "" && *algo == "":
			return cli.Usagef("say which scheduler: --algo NAME or --name NAME (`mptcp-cc sched list` shows them)")
		case name == "":
			a, err := sched.Lookup(*algo)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			name = a.Name
		}
		if err := checkPinRoot(*root, false); err != nil {
			return err
		}
		if err := sched.Unload(name, *root); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s unregistered; connections that use it keep it until they close, new ones in a namespace that names it get the kernel's default\n", name)
		return nil
	}
}

const schedUpgradeHelp = `Replaces the programs of loaded schedulers with this binary's build,
under the same name and on the same pins (parameters, counters, trace):
connections opened from then on run the new build, connections already
open keep the programs they run until they close. Names may be given as
arguments or with --name; without any, every registered scheduler under
--bpffs whose build is not this binary's is upgraded.

The kernel's scheduler hook cannot replace a registered scheduler in place:
its struct_ops (bpf_mptcp_sched_ops, mptcp_net-next's export branch, as in
Linux 7.3 with it) has no update operation, so the kernel answers the link
update with EOPNOTSUPP. The upgrade then loads and verifies the new build
first, unregisters the old one and registers the new one under the name at
once. For that window (reported; 0.3-4.1 ms measured in an emulated VM),
new connections of a namespace that names the scheduler get the kernel's
default one, to their end. Where the maps' layout changed (ABI), it
refuses: unload and load then.`

func cmdSchedUpgrade(fs *flag.FlagSet) cli.Action {
	var names stringList
	fs.Var(&names, "name", "registered `NAME` to upgrade (repeatable; default: every loaded one)")
	force := fs.Bool("force", false, "replace the programs even where they already are this binary's build")
	asJSON := fs.Bool("json", false, "JSON output")
	root := schedRootFlag(fs, "bpffs")
	return func(pos []string, out io.Writer) error {
		names = append(names, pos...)
		registered := func() ([]string, error) {
			loaded, err := sched.List(*root)
			var names []string
			for _, l := range loaded {
				if l.Registered {
					names = append(names, l.Name)
				}
			}
			return names, err
		}
		upgrade := func(name string) (sched.Upgraded, error) { return sched.Upgrade(name, *root, *force) }
		return upgradeAll(out, *root, names, *asJSON, "mptcp-cc sched list", sched.ValidName, registered, upgrade, describeSchedUpgrade)
	}
}

// describeSchedUpgrade is upgradeLine and how the kernel took it.
func describeSchedUpgrade(u sched.Upgraded) string {
	s := upgradeLine(u.Name, u.From, u.To, u.Recorded, u.Skipped)
	switch {
	case u.Skipped:
	case u.InPlace:
		s += "; replaced in place"
	default:
		s += fmt.Sprintf("\n  the kernel refused to replace it in place (%s: %s); re-registered instead: the name was unregistered for %v, and a connection opened in that window got the kernel's default scheduler", u.Refused, sched.NoUpdate, u.Window)
	}
	return s
}

func cmdSchedUse(fs *flag.FlagSet) cli.Action {
	ns := fs.String("netns", "", "named network namespace `NAME` (`ip netns list`; default: this one)")
	asJSON := fs.Bool("json", false, "JSON output")
	return func(pos []string, out io.Writer) error {
		name, err := schedName(pos, "a registered scheduler (`mptcp-cc sched list` shows them; default is the kernel's own)")
		if err != nil {
			return err
		}
		prev, err := sched.Current(*ns)
		if err != nil {
			return err
		}
		if err := sched.Use(name, *ns); err != nil {
			if errors.Is(err, os.ErrPermission) {
				return fmt.Errorf("%w: needs root (CAP_NET_ADMIN in the namespace)", err)
			}
			return err
		}
		if *asJSON {
			return cli.WriteJSON(out, struct {
				Netns     string `json:"netns"`
				Scheduler string `json:"scheduler"`
				Previous  string `json:"previous"`
			}{*ns, name, prev})
		}
		fmt.Fprintf(out, "network namespace %s: new MPTCP connections get scheduler %s (was %s); open connections keep theirs\n", nsLabel(*ns), name, prev)
		return nil
	}
}

func nsLabel(ns string) string {
	if ns == "" {
		return "(own)"
	}
	return ns
}

// schedList is what `sched list` shows; its JSON form is the --json output.
type schedList struct {
	Algorithms []schedAlgo   `json:"algorithms"`
	Loaded     []schedLoaded `json:"loaded"`
	Available  []string      `json:"available"` // in the caller's namespace
	Netns      []schedNetns  `json:"netns"`
	// Hook: this kernel can register our schedulers (the BPF MPTCP
	// scheduler hook); NoHook says why it cannot.
	Hook   bool   `json:"hook"`
	NoHook string `json:"no_hook,omitempty"`
	errs   []error
}

type schedAlgo struct {
	Algo     string   `json:"algo"`
	Summary  string   `json:"summary"`
	LoadedAs []string `json:"loaded_as"`
}

type schedLoaded struct {
	Name       string    `json:"name"`
	Algo       string    `json:"algo"` // "" when its parameters are unreadable
	Trace      bool      `json:"trace"`
	Args       [6]uint32 `json:"args"`
	Registered bool      `json:"registered"`
	PinDir     string    `json:"pin_dir"`
	// Build is what loaded it (null: mptcp-cc 0.1.0, which recorded
	// none for schedulers); Current, whether that is this binary.
	Build   *structops.Build `json:"build"`
	Current bool             `json:"current"`
	// Sums over the subflows its counter map holds (an LRU map: closed
	// subflows stay until newer ones push them out).
	Subflows   int    `json:"subflows"`
	Sends      uint64 `json:"sends"`
	Retrans    uint64 `json:"retrans"`
	BurstBytes uint64 `json:"burst_bytes"`
}

type schedNetns struct {
	Netns     string `json:"netns"` // "" is the caller's own
	Scheduler string `json:"scheduler,omitempty"`
	Error     string `json:"error,omitempty"`
}

// readSchedList reads everything `sched list` shows: what cannot be read
// is named in errs, the rest is kept.
func readSchedList(root string) schedList {
	var l schedList
	if err := sched.CheckHook(); err != nil {
		l.NoHook = err.Error()
	} else {
		l.Hook = true
	}
	loaded, err := sched.List(root)
	if err != nil {
		l.errs = append(l.errs, needsRoot(err, root))
	}
	var counters []sched.SubflowStats
	if err == nil || loaded != nil {
		if counters, err = sched.Stats(root); err != nil {
			l.errs = append(l.errs, needsRoot(err, root))
		}
	}
	byName := map[string]*schedLoaded{}
	l.Loaded = []schedLoaded{}
	for _, s := range loaded {
		e := schedLoaded{Name: s.Name, Algo: s.Algorithm, Trace: s.Params.Trace, Args: s.Params.Args, Registered: s.Registered, PinDir: filepath.Join(root, s.Name), Current: s.Current()}
		if s.BuildRecorded {
			e.Build = &s.Build
		}
		l.Loaded = append(l.Loaded, e)
	}
	for i := range l.Loaded {
		byName[l.Loaded[i].Name] = &l.Loaded[i]
	}
	for _, c := range counters {
		if s := byName[c.Scheduler]; s != nil {
			s.Subflows++
			s.Sends += c.Sends
			s.Retrans += c.Retrans
			s.BurstBytes += c.BurstBytes
		}
	}
	for _, a := range sched.Algorithms() {
		e := schedAlgo{Algo: a.Name, Summary: a.Summary, LoadedAs: []string{}}
		for _, s := range l.Loaded {
			if s.Algo == a.Name {
				e.LoadedAs = append(e.LoadedAs, s.Name)
			}
		}
		l.Algorithms = append(l.Algorithms, e)
	}
	l.Available, err = sched.Available()
	if err != nil {
		l.errs = append(l.errs, err)
	}
	if l.Available == nil {
		l.Available = []string{}
	}
	l.Netns = []schedNetns{}
	for _, ns := range append([]string{""}, namedNetns()...) {
		cur, err := sched.Current(ns)
		if err != nil && ns != "" && !netns.Exists(ns) {
			continue // deleted while we listed
		}
		e := schedNetns{Netns: ns, Scheduler: cur}
		if err != nil {
			e.Error = err.Error()
			l.errs = append(l.errs, fmt.Errorf("the scheduler of network namespace %s: %w", nsLabel(ns), err))
		}
		l.Netns = append(l.Netns, e)
	}
	return l
}

// namedNetns lists the named network namespaces (ip netns), sorted.
func namedNetns() []string {
	entries, _ := os.ReadDir(netns.Dir)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func cmdSchedList(fs *flag.FlagSet) cli.Action {
	asJSON := fs.Bool("json", false, "JSON output")
	root := schedRootFlag(fs, "bpffs")
	return func(_ []string, out io.Writer) error {
		if err := checkPinRoot(*root, false); err != nil {
			return err
		}
		l := readSchedList(*root)
		if *asJSON {
			if err := cli.WriteJSON(out, l); err != nil {
				return err
			}
		} else if err := printSchedList(out, l); err != nil {
			return err
		}
		return errors.Join(l.errs...)
	}
}

func printSchedList(out io.Writer, l schedList) error {
	t := cli.NewTable(out, "SCHEDULER", "LOADED AS", "DESCRIPTION")
	for _, a := range l.Algorithms {
		as := strings.Join(a.LoadedAs, ", ")
		if as == "" {
			as = "-"
		}
		t.Row(a.Algo, as, a.Summary)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	switch {
	case !l.Hook:
		// Suggest nothing that cannot work here.
		fmt.Fprintf(out, "schedulers cannot be loaded here: %s\n", l.NoHook)
	case len(l.Loaded) == 0:
		fmt.Fprintf(out, "none loaded; try `mptcp-cc sched load --algo %s`\n", sched.Names()[0])
	}
	if len(l.Loaded) != 0 {
		t = cli.NewTable(out, "LOADED", "SCHEDULER", "PARAMETERS", "STATE", "SUBFLOWS", "SENDS", "RETRANS", "BURST BYTES", "BUILD")
		for _, s := range l.Loaded {
			state := "registered"
			if !s.Registered {
				state = "NOT REGISTERED (stale pins: mptcp-cc sched unload --name " + s.Name + ")"
			}
			algo := s.Algo
			if algo == "" {
				algo = "?"
			}
			var b structops.Build
			if s.Build != nil {
				b = *s.Build
			}
			t.Row(s.Name, algo, describeSchedParams(s.Trace, s.Args), state, s.Subflows, s.Sends, s.Retrans, s.BurstBytes,
				describeBuild(b, s.Build != nil, "", 0, "mptcp-cc sched upgrade "+s.Name))
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\nthe kernel offers: %s\n\n", strings.Join(l.Available, " "))
	t = cli.NewTable(out, "NETNS", "SCHEDULER")
	for _, n := range l.Netns {
		cur := n.Scheduler
		if n.Error != "" {
			cur = "? (" + n.Error + ")"
		}
		t.Row(nsLabel(n.Netns), cur)
	}
	return t.Flush()
}

func describeSchedParams(trace bool, args [6]uint32) string {
	var parts []string
	for i, v := range args {
		if v != 0 {
			parts = append(parts, fmt.Sprintf("arg%d=%d", i, v))
		}
	}
	if trace {
		parts = append(parts, "trace")
	}
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, " ")
}
