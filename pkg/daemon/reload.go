// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

// algoChange is an algorithm entry whose name stays while what it is
// changes.
type algoChange struct{ old, new Algorithm }

// policyChange is a rule whose selector (cgroup, dst, dst_port) stays while
// what it gives (cc, tcp) changes.
type policyChange struct{ old, new resolvedPolicy }

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

	listen      bool // metrics.listen_address or allow_remote changed
	maxSubflows bool
	events      bool
	pathctl     bool
	onExit      bool
}

// planReload compares two resolved configurations and their resolved
// policies. It refuses what a reload cannot do: move the pin roots, or
// keep a rule that names an algorithm the new configuration unloads.
func planReload(old Config, oldPols []resolvedPolicy, cfg Config, pols []resolvedPolicy) (reloadPlan, error) {
	var p reloadPlan
	var errs []error
	if filepath.Clean(old.BPFFS) != filepath.Clean(cfg.BPFFS) {
		errs = append(errs, fmt.Errorf("bpffs: %s is in force and the file now says %s: a reload does not move what is pinned; restart the daemon to change it (what is pinned under %s stays until unloaded)", old.BPFFS, cfg.BPFFS, old.BPFFS))
	}
	if filepath.Clean(old.PolicyBPFFS) != filepath.Clean(cfg.PolicyBPFFS) {
		errs = append(errs, fmt.Errorf("policy_bpffs: %s is in force and the file now says %s: a reload does not move what is pinned; restart the daemon to change it (what is pinned under %s stays until detached)", old.PolicyBPFFS, cfg.PolicyBPFFS, old.PolicyBPFFS))
	}

	oldAlgos := map[string]Algorithm{}
	for _, a := range old.Algorithms {
		oldAlgos[a.Name] = a
	}
	newNames := map[string]bool{}
	for _, a := range cfg.Algorithms {
		newNames[a.Name] = true
		o, ok := oldAlgos[a.Name]
		switch {
		case !ok:
			p.load = append(p.load, a)
		case o.Algo != a.Algo:
			p.replace = append(p.replace, algoChange{o, a})
		case o.Params() != a.Params():
			p.update = append(p.update, algoChange{o, a})
		default:
			p.keep = append(p.keep, a.Name)
		}
	}
	unloaded := map[string]bool{}
	for _, a := range old.Algorithms {
		if !newNames[a.Name] {
			p.unload = append(p.unload, a)
			unloaded[a.Name] = true
		}
	}

	oldBySel := map[string]resolvedPolicy{}
	for _, r := range oldPols {
		oldBySel[selectorKey(r.rule)] = r
	}
	newSel := map[string]bool{}
	for _, r := range pols {
		if unloaded[r.rule.CC] {
			errs = append(errs, fmt.Errorf("policies[%d].cc: %s is dropped from algorithms by this file and would be unloaded; keep it in algorithms or give the rule another cc", r.index, r.rule.CC))
		}
		k := selectorKey(r.rule)
		newSel[k] = true
		o, ok := oldBySel[k]
		switch {
		case !ok:
			p.attach = append(p.attach, r)
		case o.rule.CC != r.rule.CC || o.rule.PlainTCP != r.rule.PlainTCP || o.rule.DelackMax != r.rule.DelackMax:
			p.change = append(p.change, policyChange{o, r})
		default:
			p.keepPolicies = append(p.keepPolicies, r)
		}
	}
	for _, r := range oldPols {
		if !newSel[selectorKey(r.rule)] {
			p.detach = append(p.detach, r)
		}
	}

	var serrs []error
	p.sched, serrs = planSched(old, cfg)
	errs = append(errs, serrs...)

	p.listen = old.Metrics.ListenAddress != cfg.Metrics.ListenAddress || old.Metrics.AllowRemote != cfg.Metrics.AllowRemote
	p.maxSubflows = *old.Metrics.MaxSubflows != *cfg.Metrics.MaxSubflows
	p.events = !reflect.DeepEqual(old.Events, cfg.Events)
	p.pathctl = !reflect.DeepEqual(old.Pathctl, cfg.Pathctl)
	p.onExit = old.OnExit != cfg.OnExit
	return p, errors.Join(errs...)
}

func selectorKey(r policy.Rule) string {
	return fmt.Sprintf("%s|%s|%d", filepath.Clean(r.Cgroup), prefixString(r.Dst), r.DstPort)
}

// delackString is a rule's delayed-ACK cap as the plan prints it: nothing
// when the kernel's timer is kept.
func delackString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return fmt.Sprintf(" delack_max=%v", d)
}

func ruleString(r policy.Rule) string {
	return fmt.Sprintf("%s dst %s port %d: %s tcp=%v%s", r.Cgroup, prefixString(r.Dst), r.DstPort, r.CC, r.PlainTCP, delackString(r.DelackMax))
}

// actions describes the plan, one change a line, for the log and the tests.
func (p reloadPlan) actions(old, cfg Config) []string {
	var out []string
	for _, a := range p.load {
		out = append(out, fmt.Sprintf("load %s (%s)", a.Name, a.Algo))
	}
	for _, c := range p.update {
		out = append(out, fmt.Sprintf("update %s in place: %+v -> %+v", c.new.Name, c.old.Params(), c.new.Params()))
	}
	for _, c := range p.replace {
		out = append(out, fmt.Sprintf("replace %s: %s -> %s (unload, then load)", c.new.Name, c.old.Algo, c.new.Algo))
	}
	for _, a := range p.unload {
		out = append(out, fmt.Sprintf("unload %s", a.Name))
	}
	for _, r := range p.attach {
		out = append(out, "attach "+ruleString(r.rule))
	}
	for _, c := range p.change {
		out = append(out, fmt.Sprintf("change %s -> %s tcp=%v%s", ruleString(c.old.rule), c.new.rule.CC, c.new.rule.PlainTCP, delackString(c.new.rule.DelackMax)))
	}
	for _, r := range p.detach {
		out = append(out, "detach "+ruleString(r.rule))
	}
	out = append(out, p.sched.actions()...)
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
	pols, err := preflight(cfg, r.pe)
	if err = errors.Join(err, preflightSched(cfg, r.se)); err != nil {
		return false, err
	}
	plan, err := planReload(r.cfg, r.st.policies, cfg, pols)
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
	err = r.reloadAlgorithms(cfg, plan, st, &undo)
	if err == nil {
		err = r.reloadPolicies(cfg, pols, st, &undo)
	}
	if err == nil {
		err = r.reloadSchedulers(cfg, plan.sched, st, &undo)
	}
	if err == nil {
		err = r.reloadNetns(cfg, st, &undo)
	}
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
	removeErr := errors.Join(r.removeDropped(plan), r.removeDroppedSched(plan.sched))
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

// reloadAlgorithms brings the algorithms to cfg: every entry is set up as at
// start (unchanged ones are adopted with no change in the kernel); an entry
// that names another algorithm than before is unloaded first, because the
// kernel does not register two congestion controls of one name.
func (r *running) reloadAlgorithms(cfg Config, plan reloadPlan, st *state, undo *undoStack) error {
	root := cfg.BPFFS
	for _, c := range plan.replace {
		old := c.old
		alg, err := cc.Lookup(old.Algo)
		if err != nil {
			return err
		}
		if err := r.handler.exclusive(func() error { return cc.Unload(old.Name, root) }); err != nil && !errors.Is(err, cc.ErrNotLoaded) {
			return fmt.Errorf("unloading %s (%s) to load it as %s: %w", old.Name, old.Algo, c.new.Algo, err)
		}
		r.log.Info("unloaded to be replaced; its connections keep it until they close", "name", old.Name, "algo", old.Algo)
		undo.push(func() error {
			return r.handler.exclusive(func() error {
				return cc.Load(alg, cc.Options{Name: old.Name, PinRoot: root, Params: old.Params()})
			})
		})
	}
	byName, err := pinnedAlgorithms(root)
	if err != nil {
		return err
	}
	for i, a := range cfg.Algorithms {
		var act action
		if err := r.handler.exclusive(func() (err error) {
			act, err = setUpAlgorithm(root, i, a, byName, cfg.Adopt, r.log, slog.LevelDebug)
			return err
		}); err != nil {
			return err
		}
		st.algos[a.Name] = act
		name := a.Name
		switch act {
		case actLoaded:
			undo.push(func() error { return r.handler.exclusive(func() error { return cc.Unload(name, root) }) })
		case actUpdated:
			prev := byName[name].Params
			undo.push(func() error { return cc.SetParams(root, name, prev) })
		}
	}
	return nil
}

// reloadPolicies attaches the rules of cfg that are not in force as they
// are; a changed rule replaces the one of its selector in place.
func (r *running) reloadPolicies(cfg Config, pols []resolvedPolicy, st *state, undo *undoStack) error {
	if len(pols) == 0 {
		return nil
	}
	attached, err := r.pe.List(cfg.PolicyBPFFS)
	if err != nil {
		return err
	}
	root := cfg.PolicyBPFFS
	for _, p := range pols {
		p, replaced, err := setUpPolicy(root, r.pe, attached, p, r.log, slog.LevelDebug)
		if err != nil {
			return err
		}
		st.policies = append(st.policies, p)
		switch {
		case replaced != nil:
			prev := policy.Rule{Cgroup: p.rule.Cgroup, CC: replaced.CC, Dst: replaced.Dst, DstPort: replaced.DstPort, PlainTCP: replaced.PlainTCP, DelackMax: replaced.DelackMax}
			undo.push(func() error { return r.pe.Attach(prev, root) })
		case p.action == actLoaded:
			undo.push(func() error { return detachPolicies(cfg, r.pe, []resolvedPolicy{p}) })
		}
	}
	return nil
}

// removeDropped detaches the rules and unloads the algorithms the old
// configuration named and the new one does not (adopted ones included, as
// on_exit remove does); the rules first, so none is left naming a CC that
// is gone. Connections running an unloaded CC keep it until they close.
func (r *running) removeDropped(plan reloadPlan) error {
	var errs []error
	if err := detachPolicies(r.cfg, r.pe, plan.detach); err != nil {
		errs = append(errs, err)
	}
	for _, a := range plan.unload {
		if err := r.handler.exclusive(func() error { return cc.Unload(a.Name, r.cfg.BPFFS) }); err != nil && !errors.Is(err, cc.ErrNotLoaded) {
			errs = append(errs, fmt.Errorf("unloading %s: %w (it stays loaded; `mptcp-cc unload --name %s` removes it)", a.Name, err, a.Name))
			continue
		}
		r.log.Info("unloaded", "name", a.Name)
	}
	return errors.Join(errs...)
}

// monotonicUsec is the clock systemd wants with RELOADING=1.
func monotonicUsec() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano() / 1e3
}
