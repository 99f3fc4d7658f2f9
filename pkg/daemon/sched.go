// SPDX-License-Identifier: Apache-2.0

package daemon

// The packet schedulers: loading or adopting the configured ones, giving
// the configured namespaces theirs, undoing both (a failed start, on_exit
// remove), and what a reload changes. The same rules as for the
// congestion controls, but for one: a scheduler's parameters cannot be
// changed in place (pkg/sched has no such call), so other parameters mean
// unload, then load.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// SchedEngine is what the daemon needs of pkg/sched; tests use a fake.
type SchedEngine interface {
	Load(a sched.Algorithm, opts sched.Options) error
	Unload(name, root string) error
	List(root string) ([]sched.Loaded, error)
	// Available lists the registered schedulers.
	Available() ([]string, error)
	// Use and Current set and read a namespace's scheduler ("" is the
	// daemon's own).
	Use(name, netns string) error
	Current(netns string) (string, error)
	// Upgrade replaces a loaded scheduler's programs with this binary's
	// build (sched.Upgrade).
	Upgrade(name, root string) (sched.Upgraded, error)
}

// KernelSched is the real engine: pkg/sched.
type KernelSched struct{}

// Load implements SchedEngine.
func (KernelSched) Load(a sched.Algorithm, opts sched.Options) error { return sched.Load(a, opts) }

// Unload implements SchedEngine.
func (KernelSched) Unload(name, root string) error { return sched.Unload(name, root) }

// List implements SchedEngine.
func (KernelSched) List(root string) ([]sched.Loaded, error) { return sched.List(root) }

// Available implements SchedEngine.
func (KernelSched) Available() ([]string, error) { return sched.Available() }

// Use implements SchedEngine.
func (KernelSched) Use(name, netns string) error { return sched.Use(name, netns) }

// Current implements SchedEngine.
func (KernelSched) Current(netns string) (string, error) { return sched.Current(netns) }

// Upgrade implements SchedEngine.
func (KernelSched) Upgrade(name, root string) (sched.Upgraded, error) {
	return sched.Upgrade(name, root, false)
}

// netnsSet is a namespace scheduler the daemon keeps in force.
type netnsSet struct {
	cfg    NetnsScheduler
	prev   string // what the namespace had before this run set it
	action action
}

// defaultScheduler is the kernel's own, what a namespace gets back when the
// configuration stops naming one for it.
const defaultScheduler = "default"

var schedulerResource = resource{
	name:  "schedulers",
	check: checkSchedulers,
	setUp: func(r *running, t *target, st *state) error { return setUpSchedulers(t.cfg, r.se, st, r.log) },
	undo:  undoSchedulers,
	plan:  planSchedulers,
	reload: func(r *running, t *target, p reloadPlan, st *state, undo *undoStack) error {
		return r.reloadSchedulers(t.cfg, p.sched, st, undo)
	},
	drop:   dropSchedulers,
	remove: removeSchedulers,
}

// netnsResource gives namespaces a scheduler, so it comes after the
// schedulers.
var netnsResource = resource{
	name:  "netns_schedulers",
	check: checkNetns,
	setUp: func(r *running, t *target, st *state) error { return setUpNetns(t.cfg, r.se, st, r.log) },
	undo: func(r *running, _ Config, st *state) {
		if err := restoreNetns(r.se, st.netns); err != nil {
			r.log.Error("undoing the namespace schedulers set before the failure", "err", err)
		}
	},
	plan: planNetns,
	reload: func(r *running, t *target, _ reloadPlan, st *state, undo *undoStack) error {
		return r.reloadNetns(t.cfg, st, undo)
	},
	drop:   func(r *running, p reloadPlan) error { return resetNetns(r.se, p.sched.reset, r.log) },
	remove: func(r *running, cfg Config) error { return resetNetns(r.se, cfg.NetnsSchedulers, r.log) },
}

// checkSchedulers checks that the scheduler pins can be read.
func checkSchedulers(r *running, t *target) error {
	if _, err := r.se.List(t.cfg.SchedBPFFS); err != nil {
		return fmt.Errorf("reading the schedulers pinned under %s: %w", t.cfg.SchedBPFFS, err)
	}
	return nil
}

// checkNetns checks that every namespace exists and has MPTCP and is given
// a scheduler that the file loads or the kernel has.
func checkNetns(r *running, t *target) error {
	cfg, se := t.cfg, r.se
	if len(cfg.NetnsSchedulers) == 0 {
		return nil
	}
	avail, err := se.Available()
	if err != nil {
		return fmt.Errorf("netns_schedulers: %w", err)
	}
	var errs []error
	for i, n := range cfg.NetnsSchedulers {
		f := fmt.Sprintf("netns_schedulers[%d]", i)
		if _, err := se.Current(n.Netns); err != nil {
			errs = append(errs, fmt.Errorf("%s.netns: %w", f, err))
		}
		inFile := slices.ContainsFunc(cfg.Schedulers, func(s Scheduler) bool { return s.Name == n.Scheduler })
		if !inFile && !slices.Contains(avail, n.Scheduler) {
			errs = append(errs, fmt.Errorf("%s.scheduler: %q is neither in the schedulers list nor registered (registered: %s)", f, n.Scheduler, strings.Join(avail, " ")))
		}
	}
	return errors.Join(errs...)
}

func pinnedSchedulers(se SchedEngine, root string) (map[string]sched.Loaded, error) {
	loaded, err := se.List(root)
	if err != nil {
		return nil, err
	}
	byName := map[string]sched.Loaded{}
	for _, l := range loaded {
		byName[l.Name] = l
	}
	return byName, nil
}

// setUpSchedulers loads or adopts each configured scheduler.
func setUpSchedulers(cfg Config, se SchedEngine, st *state, log *slog.Logger) error {
	if len(cfg.Schedulers) == 0 {
		return nil
	}
	byName, err := pinnedSchedulers(se, cfg.SchedBPFFS)
	if err != nil {
		return err
	}
	for i, s := range cfg.Schedulers {
		act, err := setUpScheduler(se, cfg.SchedBPFFS, i, s, byName, cfg.Adopt, log, slog.LevelInfo)
		if err != nil {
			return err
		}
		st.scheds[s.Name] = act
	}
	return nil
}

// setUpScheduler loads schedulers[i], or adopts it when it is already
// pinned: same scheduler, same parameters: nothing to do; other
// parameters: unloaded and loaded again with the configured ones
// (connections that run it keep the old instance until they close);
// another scheduler under the name: an error. Pinned by another build of
// mptcp-cc with the configured parameters, it is upgraded first when adopt
// is upgrade (sched.Upgrade: re-registered under the name), and kept with
// a warning otherwise. Adoptions are logged at adopted.
func setUpScheduler(se SchedEngine, root string, i int, s Scheduler, byName map[string]sched.Loaded, adopt Adopt, log *slog.Logger, adopted slog.Level) (action, error) {
	alg, err := sched.Lookup(s.Algo)
	if err != nil {
		return "", err
	}
	field := fmt.Sprintf("schedulers[%d]", i)
	load := func() error {
		if err := se.Load(alg, sched.Options{Name: s.Name, PinRoot: root, Params: s.Params()}); err != nil {
			return fmt.Errorf("%s: loading %s as %s: %w", field, s.Algo, s.Name, err)
		}
		return nil
	}
	if l, ok := byName[s.Name]; ok {
		switch {
		case !l.Registered:
			log.Warn("stale scheduler pins (the kernel no longer lists it): removing them and loading afresh", "name", s.Name)
			if err := se.Unload(s.Name, root); err != nil {
				return "", fmt.Errorf("%s: removing the stale pins of %s: %w", field, s.Name, err)
			}
		case l.Algorithm != s.Algo:
			was := l.Algorithm
			if was == "" {
				was = "a scheduler whose parameters cannot be read"
			}
			return "", fmt.Errorf("%s: %s is already loaded as %s, the configuration wants %s: unload it first (`mptcp-cc sched unload %s`) or give the entry another name", field, s.Name, was, s.Algo, s.Name)
		case l.Params == s.Params():
			if err := adoptSchedulerBuild(se, root, field, l, adopt, log); err != nil {
				return "", err
			}
			log.Log(context.Background(), adopted, "scheduler adopted", "name", s.Name, "algo", s.Algo)
			return actAdopted, nil
		default:
			if err := se.Unload(s.Name, root); err != nil {
				return "", fmt.Errorf("%s: unloading %s to load it with the configured parameters: %w", field, s.Name, err)
			}
			if err := load(); err != nil {
				return "", err
			}
			log.Info("scheduler adopted; loaded again with the configured parameters (connections that run it keep the old ones)", "name", s.Name, "algo", s.Algo,
				"was", fmt.Sprintf("%+v", l.Params), "now", fmt.Sprintf("%+v", s.Params()))
			return actUpdated, nil
		}
	}
	if err := load(); err != nil {
		return "", err
	}
	log.Info("scheduler loaded", "name", s.Name, "algo", s.Algo, "trace", s.Trace, "args", s.Args)
	return actLoaded, nil
}

// adoptSchedulerBuild does what adopt says with a scheduler l another
// build of mptcp-cc loaded (nothing when it is this binary's).
func adoptSchedulerBuild(se SchedEngine, root, field string, l sched.Loaded, adopt Adopt, log *slog.Logger) error {
	if l.Current() {
		return nil
	}
	pinned := "an unrecorded build"
	if l.BuildRecorded {
		pinned = l.Build.Version
	}
	if adopt != AdoptUpgrade {
		log.Warn("adopting a scheduler another build of mptcp-cc loaded: new connections get the pinned build until `mptcp-cc sched upgrade` (or adopt: upgrade in the configuration)",
			"name", l.Name, "pinned", pinned, "this", structops.ThisBuild().Version)
		return nil
	}
	u, err := se.Upgrade(l.Name, root)
	if err != nil {
		return fmt.Errorf("%s: upgrading scheduler %s (adopt: upgrade): %w", field, l.Name, err)
	}
	how := "in place"
	if !u.InPlace {
		how = "re-registered (" + sched.NoUpdate + ")"
	}
	log.Info("scheduler upgraded; connections already open keep the previous build", "name", l.Name, "from", pinned, "to", u.To.Version,
		"generation", u.To.Generation, "how", how, "unregistered_for", u.Window)
	return nil
}

// setUpNetns gives each configured namespace its scheduler, adopting one
// that already has it.
func setUpNetns(cfg Config, se SchedEngine, st *state, log *slog.Logger) error {
	for i, n := range cfg.NetnsSchedulers {
		s, err := setNetns(se, i, n, log, slog.LevelInfo)
		if err != nil {
			return err
		}
		st.netns = append(st.netns, s)
	}
	return nil
}

func setNetns(se SchedEngine, i int, n NetnsScheduler, log *slog.Logger, adopted slog.Level) (netnsSet, error) {
	field := fmt.Sprintf("netns_schedulers[%d]", i)
	cur, err := se.Current(n.Netns)
	if err != nil {
		return netnsSet{}, fmt.Errorf("%s.netns: %w", field, err)
	}
	if cur == n.Scheduler {
		log.Log(context.Background(), adopted, "namespace scheduler adopted", "netns", nsName(n.Netns), "scheduler", n.Scheduler)
		return netnsSet{cfg: n, action: actAdopted}, nil
	}
	if err := se.Use(n.Scheduler, n.Netns); err != nil {
		return netnsSet{}, fmt.Errorf("%s: %w", field, err)
	}
	log.Info("namespace scheduler set", "netns", nsName(n.Netns), "scheduler", n.Scheduler, "was", cur)
	return netnsSet{cfg: n, prev: cur, action: actLoaded}, nil
}

// restoreNetns gives back the namespaces this run changed what they had
// (the kernel's default if that is gone).
func restoreNetns(se SchedEngine, sets []netnsSet) error {
	var errs []error
	for _, s := range sets {
		if s.action != actLoaded {
			continue
		}
		if err := se.Use(s.prev, s.cfg.Netns); err != nil {
			if err2 := se.Use(defaultScheduler, s.cfg.Netns); err2 != nil {
				errs = append(errs, fmt.Errorf("giving network namespace %s back its scheduler %s: %w", nsName(s.cfg.Netns), s.prev, err))
			}
		}
	}
	return errors.Join(errs...)
}

// resetNetns gives the kernel's default scheduler to each namespace that
// still has the one the configuration gave it.
func resetNetns(se SchedEngine, entries []NetnsScheduler, log *slog.Logger) error {
	var errs []error
	for _, n := range entries {
		cur, err := se.Current(n.Netns)
		if err != nil || cur != n.Scheduler || cur == defaultScheduler {
			continue // gone, or changed by someone else since: theirs now
		}
		if err := se.Use(defaultScheduler, n.Netns); err != nil {
			errs = append(errs, fmt.Errorf("giving network namespace %s the default scheduler back: %w", nsName(n.Netns), err))
			continue
		}
		log.Info("namespace scheduler reset", "netns", nsName(n.Netns), "scheduler", defaultScheduler, "was", cur)
	}
	return errors.Join(errs...)
}

// undoSchedulers unloads the schedulers a failed start loaded; what it
// adopted stays.
func undoSchedulers(r *running, cfg Config, st *state) {
	for name, act := range st.scheds {
		if act != actLoaded {
			continue
		}
		if err := r.se.Unload(name, cfg.SchedBPFFS); err != nil {
			r.log.Error("undoing the load of scheduler "+name, "err", err)
		}
	}
}

// removeSchedulers is on_exit remove for the schedulers: the configured
// ones, adopted or not (the namespaces were given theirs back before).
func removeSchedulers(r *running, cfg Config) error {
	se, log := r.se, r.log
	var errs []error
	for _, s := range cfg.Schedulers {
		if err := se.Unload(s.Name, cfg.SchedBPFFS); err != nil {
			if !errors.Is(err, sched.ErrNotLoaded) {
				errs = append(errs, err)
			}
			continue
		}
		log.Info("scheduler unloaded", "name", s.Name)
	}
	return errors.Join(errs...)
}

// netnsList is the namespaces whose scheduler the metrics report.
func netnsList(cfg Config) []string {
	var out []string
	for _, n := range cfg.NetnsSchedulers {
		out = append(out, n.Netns)
	}
	return out
}

// schedChange is a scheduler entry whose name stays while what it is
// (scheduler or parameters) changes.
type schedChange struct{ old, new Scheduler }

// schedPlan is what a reload does to the schedulers and the namespaces.
type schedPlan struct {
	load    []Scheduler
	replace []schedChange // unload, then load
	unload  []Scheduler
	keep    []string

	set   []NetnsScheduler // new entries, or another scheduler
	reset []NetnsScheduler // entries the file dropped: back to the default
	netns bool             // the namespaces the metrics report changed
}

// planSchedulers compares the schedulers of two configurations. The pin
// root cannot move.
func planSchedulers(rp *reloadPlan, oldT, nextT *target) ([]string, []error) {
	old, cfg, p := oldT.cfg, nextT.cfg, &rp.sched
	var errs []error
	if old.SchedBPFFS != cfg.SchedBPFFS {
		errs = append(errs, fmt.Errorf("sched_bpffs: %s is in force and the file now says %s: a reload does not move what is pinned; restart the daemon to change it (what is pinned under %s stays until unloaded)", old.SchedBPFFS, cfg.SchedBPFFS, old.SchedBPFFS))
	}
	var both [][2]Scheduler
	p.load, both, p.unload = byName(old.Schedulers, cfg.Schedulers, func(s Scheduler) string { return s.Name })
	for _, b := range both {
		o, s := b[0], b[1]
		if o.Algo != s.Algo || o.Params() != s.Params() {
			p.replace = append(p.replace, schedChange{o, s})
		} else {
			p.keep = append(p.keep, s.Name)
		}
	}
	var out []string
	for _, s := range p.load {
		out = append(out, fmt.Sprintf("load scheduler %s (%s)", s.Name, s.Algo))
	}
	for _, c := range p.replace {
		out = append(out, fmt.Sprintf("replace scheduler %s: %s %+v -> %s %+v (unload, then load)", c.new.Name, c.old.Algo, c.old.Params(), c.new.Algo, c.new.Params()))
	}
	for _, s := range p.unload {
		out = append(out, fmt.Sprintf("unload scheduler %s", s.Name))
	}
	return out, errs
}

// planNetns compares the namespace schedulers of two configurations; a
// namespace cannot keep a scheduler the reload unloads (planSchedulers
// planned that before).
func planNetns(rp *reloadPlan, oldT, nextT *target) ([]string, []error) {
	old, cfg, p := oldT.cfg, nextT.cfg, &rp.sched
	var errs []error
	oldNetns := map[string]string{}
	for _, n := range old.NetnsSchedulers {
		oldNetns[n.Netns] = n.Scheduler
	}
	kept := map[string]bool{}
	for i, n := range cfg.NetnsSchedulers {
		if slices.ContainsFunc(p.unload, func(s Scheduler) bool { return s.Name == n.Scheduler }) {
			errs = append(errs, fmt.Errorf("netns_schedulers[%d].scheduler: %s is dropped from schedulers by this file and would be unloaded; keep it in schedulers or give the namespace another scheduler", i, n.Scheduler))
		}
		kept[n.Netns] = true
		if was, ok := oldNetns[n.Netns]; !ok || was != n.Scheduler {
			p.set = append(p.set, n)
		}
	}
	for _, n := range old.NetnsSchedulers {
		if !kept[n.Netns] {
			p.reset = append(p.reset, n)
		}
	}
	p.netns = !slices.Equal(netnsList(old), netnsList(cfg))
	var out []string
	for _, n := range p.set {
		out = append(out, fmt.Sprintf("set the scheduler of netns %s: %s", nsName(n.Netns), n.Scheduler))
	}
	for _, n := range p.reset {
		out = append(out, fmt.Sprintf("give netns %s the default scheduler back (was %s)", nsName(n.Netns), n.Scheduler))
	}
	return out, errs
}

// reloadSchedulers brings the schedulers to cfg: a replaced entry is
// unloaded first (the kernel does not register two of one name), then
// every entry is set up as at start.
func (r *running) reloadSchedulers(cfg Config, plan schedPlan, st *state, undo *undoStack) error {
	root := cfg.SchedBPFFS
	for _, c := range plan.replace {
		old := c.old
		alg, err := sched.Lookup(old.Algo)
		if err != nil {
			return err
		}
		if err := r.handler.exclusive(func() error { return r.se.Unload(old.Name, root) }); err != nil && !errors.Is(err, sched.ErrNotLoaded) {
			return fmt.Errorf("unloading scheduler %s to load it as configured now: %w", old.Name, err)
		}
		r.log.Info("scheduler unloaded to be replaced; its connections keep it until they close", "name", old.Name, "algo", old.Algo)
		undo.push(func() error {
			return r.handler.exclusive(func() error {
				return r.se.Load(alg, sched.Options{Name: old.Name, PinRoot: root, Params: old.Params()})
			})
		})
	}
	if len(cfg.Schedulers) == 0 {
		return nil
	}
	byName, err := pinnedSchedulers(r.se, root)
	if err != nil {
		return err
	}
	for i, s := range cfg.Schedulers {
		var act action
		if err := r.handler.exclusive(func() (err error) {
			act, err = setUpScheduler(r.se, root, i, s, byName, cfg.Adopt, r.log, slog.LevelDebug)
			return err
		}); err != nil {
			return err
		}
		st.scheds[s.Name] = act
		name := s.Name
		switch act {
		case actLoaded:
			undo.push(func() error { return r.handler.exclusive(func() error { return r.se.Unload(name, root) }) })
		case actUpdated:
			prev := byName[name]
			undo.push(func() error {
				return r.handler.exclusive(func() error {
					alg, err := sched.Lookup(prev.Algorithm)
					if err != nil {
						return err
					}
					if err := r.se.Unload(name, root); err != nil {
						return err
					}
					return r.se.Load(alg, sched.Options{Name: name, PinRoot: root, Params: prev.Params})
				})
			})
		}
	}
	return nil
}

// reloadNetns gives each namespace of cfg its scheduler; what it changes
// is given back if a later step fails.
func (r *running) reloadNetns(cfg Config, st *state, undo *undoStack) error {
	for i, n := range cfg.NetnsSchedulers {
		s, err := setNetns(r.se, i, n, r.log, slog.LevelDebug)
		if err != nil {
			return err
		}
		st.netns = append(st.netns, s)
		if s.action == actLoaded {
			undo.push(func() error { return restoreNetns(r.se, []netnsSet{s}) })
		}
	}
	return nil
}

// dropSchedulers unloads the schedulers a reload dropped (the namespaces
// were given the default back before).
func dropSchedulers(r *running, p reloadPlan) error {
	var errs []error
	for _, s := range p.sched.unload {
		if err := r.handler.exclusive(func() error { return r.se.Unload(s.Name, r.cfg.SchedBPFFS) }); err != nil && !errors.Is(err, sched.ErrNotLoaded) {
			errs = append(errs, fmt.Errorf("unloading scheduler %s: %w (it stays loaded; `mptcp-cc sched unload %s` removes it)", s.Name, err, s.Name))
			continue
		}
		r.log.Info("scheduler unloaded", "name", s.Name)
	}
	return errors.Join(errs...)
}
