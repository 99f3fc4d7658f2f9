// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
)

// reloadPlan is the difference between the configuration in force and a
// new one, both valid and resolved: what a reload does.
type reloadPlan struct {
	load    []Algorithm  // names the old configuration did not have
	update  []algoChange // same name and algorithm, other parameters: set in place
	replace []algoChange // same name, another algorithm: unload, then load
	unload  []Algorithm  // names the new configuration dropped
	keep    []string     // algorithms that do not change

	attach       []resolvedPolicy // selectors the old configuration had no rule for
	change       []policyChange   // replaced in place (the rule keeps its id)
	detach       []resolvedPolicy // selectors the new configuration dropped
	keepPolicies []resolvedPolicy

	sched schedPlan

	// changes are what the resources' plans change, one a line.
	changes []string

	listen      bool // metrics.listen_address or allow_remote changed
	maxSubflows bool
	events      bool
	pathctl     bool
	onExit      bool
}

// planReload compares two resolved configurations and their resolved
// policies, kind by kind (planAll), then the daemon's own settings. It
// refuses what a reload cannot do: move the pin roots, or keep a rule (or
// a namespace) that names an algorithm (a scheduler) the new
// configuration unloads.
func planReload(old Config, oldPols []resolvedPolicy, cfg Config, pols []resolvedPolicy) (reloadPlan, error) {
	var p reloadPlan
	errs := planAll(&p, &target{cfg: old, pols: oldPols}, &target{cfg: cfg, pols: pols})
	p.listen = old.Metrics.ListenAddress != cfg.Metrics.ListenAddress || old.Metrics.AllowRemote != cfg.Metrics.AllowRemote
	p.maxSubflows = *old.Metrics.MaxSubflows != *cfg.Metrics.MaxSubflows
	p.events = !reflect.DeepEqual(old.Events, cfg.Events)
	p.pathctl = !reflect.DeepEqual(old.Pathctl, cfg.Pathctl)
	p.onExit = old.OnExit != cfg.OnExit
	return p, errors.Join(errs...)
}

// actions describes the plan, one change a line, for the log and the
// tests: the resources' changes, then the daemon's settings.
func (p reloadPlan) actions(old, cfg Config) []string {
	out := slices.Clone(p.changes)
	if p.listen {
		out = append(out, fmt.Sprintf("metrics address %s -> %s", old.Metrics.ListenAddress, cfg.Metrics.ListenAddress))
	}
	if p.maxSubflows {
		out = append(out, fmt.Sprintf("metrics.max_subflows %d -> %d", *old.Metrics.MaxSubflows, *cfg.Metrics.MaxSubflows))
	}
	if p.events {
		out = append(out, fmt.Sprintf("events enabled=%v namespaces=%v -> enabled=%v namespaces=%v",
			*old.Events.Enabled, old.Events.Namespaces, *cfg.Events.Enabled, cfg.Events.Namespaces))
	}
	if p.pathctl {
		out = append(out, fmt.Sprintf("pathctl %s -> %s", old.Pathctl.describe(), cfg.Pathctl.describe()))
	}
	if p.onExit {
		out = append(out, fmt.Sprintf("on_exit %s -> %s", old.OnExit, cfg.OnExit))
	}
	return out
}

// byName compares two lists of named entries, as each kind of resource
// plans its reload: the entries only next has (added, in next's order),
// the pairs both have (old and next entry of one name), and the entries
// only old has (dropped, in old's order).
func byName[T any](old, next []T, name func(T) string) (added []T, both [][2]T, dropped []T) {
	olds := make(map[string]T, len(old))
	for _, o := range old {
		olds[name(o)] = o
	}
	kept := make(map[string]bool, len(next))
	for _, n := range next {
		kept[name(n)] = true
		if o, ok := olds[name(n)]; ok {
			both = append(both, [2]T{o, n})
		} else {
			added = append(added, n)
		}
	}
	for _, o := range old {
		if !kept[name(o)] {
			dropped = append(dropped, o)
		}
	}
	return added, both, dropped
}

// undoStack holds how to take back what a reload did so far, for when a
// later step fails.
type undoStack []func() error

func (u *undoStack) push(f func() error) { *u = append(*u, f) }

func (u undoStack) run() error {
	var errs []error
	for i := len(u) - 1; i >= 0; i-- {
		errs = append(errs, u[i]())
	}
	return errors.Join(errs...)
}

// reload re-reads the configuration and applies the difference. A file
// that is invalid, or a change that fails before anything is removed,
// leaves the running configuration in force.
func (r *running) reload(ctx context.Context, read func() (Config, error)) {
	notify(fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", monotonicUsec()))
	defer notify("READY=1")
	if read == nil {
		r.log.Warn("reload requested, but the daemon has no configuration to read again")
		return
	}
	r.log.Info("reloading the configuration")
	applied, err := r.applyReload(ctx, read)
	switch {
	case err == nil:
		r.reloads.record(true, time.Now())
		r.log.Info("configuration reloaded", "algorithms", len(r.cfg.Algorithms), "policies", len(r.cfg.Policies),
			"schedulers", len(r.cfg.Schedulers), "netns_schedulers", len(r.cfg.NetnsSchedulers), "on_exit", string(r.cfg.OnExit))
	case applied:
		r.reloads.record(false, time.Now())
		r.log.Error("configuration reloaded, but not all that it drops could be removed", "err", err)
	default:
		r.reloads.record(false, time.Now())
		for _, line := range strings.Split(err.Error(), "\n") {
			r.log.Error("configuration reload refused; the running configuration stays in force", "problem", line)
		}
	}
}

// applyReload applies a new configuration. Additions and changes come first
// and are undone if one fails (applied false: the old configuration is in
// force). Removals come last; their failures are reported with applied
// true: the new configuration is in force, and what could not be removed
// is named.
func (r *running) applyReload(ctx context.Context, read func() (Config, error)) (applied bool, err error) {
	cfg, err := read()
	if err != nil {
		return false, err
	}
	if err := cfg.Validate(); err != nil {
		return false, err
	}
	cfg = cfg.Resolve()
	t, err := r.checkAll(cfg)
	if err != nil {
		return false, err
	}
	plan, err := planReload(r.cfg, r.st.policies, cfg, t.pols)
	if err != nil {
		return false, err
	}
	for _, a := range plan.actions(r.cfg, cfg) {
		r.log.Info("reload: " + a)
	}

	// Bind the new address before touching the kernel, as at start.
	var srv *metrics.Server
	if plan.listen {
		if srv, err = metrics.Listen(cfg.Metrics.ListenAddress, cfg.Metrics.AllowRemote, r.handler); err != nil {
			return false, fmt.Errorf("metrics.listen_address: %w", err)
		}
	}
	var undo undoStack
	st := newState()
	err = r.reloadAll(t, plan, st, &undo)
	if err != nil {
		if uerr := undo.run(); uerr != nil {
			err = fmt.Errorf("%w\nundoing the reload's changes: %v", err, uerr)
		}
		if srv != nil {
			_ = srv.Close()
		}
		return false, err
	}

	// The new configuration is in force from here on.
	removeErr := r.dropAll(plan)
	r.cfg, r.st = cfg, st
	r.inForce.set(st.policies)
	r.mib.SetNamespaces(mibNamespaces(cfg))
	if plan.maxSubflows || plan.sched.netns {
		r.handler.set(r.metricsHandler(cfg))
	}
	if srv != nil {
		prev := r.srv
		r.srv = srv
		r.log.Info("serving metrics", "address", "http://"+srv.Addr().String()+"/metrics", "was", prev.Addr().String())
		// Scrapes already running on the old address finish first.
		go func() { _ = prev.Close() }()
	}
	if plan.events {
		r.events.sync(ctx, cfg.Events)
	}
	if plan.pathctl {
		r.paths.sync(ctx, cfg.Pathctl)
	}
	return true, removeErr
}

// monotonicUsec is the clock systemd wants with RELOADING=1.
func monotonicUsec() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano() / 1e3
}
