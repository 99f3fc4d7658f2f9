// SPDX-License-Identifier: Apache-2.0

package daemon

// The kinds of things the daemon keeps in the kernel, in the one order
// the start, a reload and on_exit remove go through them.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// target is a configuration on its way in force: valid and resolved, with
// what the checks resolved from the system (the policies' cgroups).
type target struct {
	cfg  Config
	pols []resolvedPolicy
}

// resource is one kind of thing the daemon keeps in the kernel. Each
// operation does this kind's part of one step of the daemon's life; the
// step goes through resources in order (setting up, changing) or in the
// reverse order (taking down).
type resource struct {
	name string
	// check looks, before anything changes, for what would make setting
	// up this kind of t fail (resolving what t names into t).
	check func(r *running, t *target) error
	// setUp loads, attaches or adopts what t names at start, recording in
	// st what it did.
	setUp func(r *running, t *target, st *state) error
	// undo takes back what setUp recorded in st as its own doing (a
	// failed start): what it adopted stays. It logs what it cannot undo.
	undo func(r *running, cfg Config, st *state)
	// plan adds this kind's part of a reload from old to next to p: its
	// changes, one a line for the log, and what next cannot do (problems).
	plan func(p *reloadPlan, old, next *target) (changes []string, problems []error)
	// reload brings this kind to t (additions and changes; removals are
	// drop's), recording in st what is in force and pushing on undo how
	// to take back each change, for when a later step fails.
	reload func(r *running, t *target, p reloadPlan, st *state, undo *undoStack) error
	// drop removes what the reload's new configuration no longer names,
	// once it is in force (r.cfg is still the old configuration).
	drop func(r *running, p reloadPlan) error
	// remove is on_exit remove: everything of this kind cfg names,
	// adopted or not.
	remove func(r *running, cfg Config) error
}

// resources are the kinds in the order they are set up: a kind may name
// what an earlier one sets up, never a later one (a policy rule names an
// algorithm, a namespace a scheduler), so they are taken down in the
// reverse order and nothing is ever left naming what is gone.
var resources = []resource{
	algorithmResource,
	policyResource,
	schedulerResource,
	netnsResource,
}

// reversed is resources in the order they are taken down.
func reversed() []resource {
	r := slices.Clone(resources)
	slices.Reverse(r)
	return r
}

// checkKernel refuses a start on a kernel that lacks what the configured
// algorithms and (kernel) policies need, before anything is bound or
// loaded, naming each missing feature (kernel.Need).
func checkKernel(cfg Config, pe PolicyEngine) error {
	load, pol := kernel.NeedLoad, kernel.NeedPolicy
	load.Command, pol.Command = "serve", "serve"
	if len(cfg.Algorithms) > 0 {
		if err := load.Check(); err != nil {
			return err
		}
	}
	if _, real := pe.(KernelPolicy); real && len(cfg.Policies) > 0 {
		return pol.Check()
	}
	return nil
}

// checkAll checks cfg (valid and resolved) against the system, every kind,
// before anything changes, so a bad configuration fails with nothing done.
func (r *running) checkAll(cfg Config) (*target, error) {
	t := &target{cfg: cfg}
	var errs []error
	for _, res := range resources {
		errs = append(errs, res.check(r, t))
	}
	return t, errors.Join(errs...)
}

// setUpAll sets up t at start. If a kind fails, what the kinds before it
// (and it) did is undone, in the reverse order, and the error returned.
func (r *running) setUpAll(t *target, st *state) error {
	for i, res := range resources {
		if err := res.setUp(r, t, st); err != nil {
			for j := i; j >= 0; j-- {
				resources[j].undo(r, t.cfg, st)
			}
			return err
		}
	}
	return nil
}

// planAll compares two targets kind by kind. A later kind's plan reads
// what an earlier one planned (a rule may not name an algorithm the
// reload unloads).
func planAll(p *reloadPlan, old, next *target) []error {
	var errs []error
	for _, res := range resources {
		changes, probs := res.plan(p, old, next)
		p.changes = append(p.changes, changes...)
		errs = append(errs, probs...)
	}
	return errs
}

// reloadAll applies a reload's additions and changes, kind by kind; on
// the first failure, the caller runs undo.
func (r *running) reloadAll(t *target, p reloadPlan, st *state, undo *undoStack) error {
	for _, res := range resources {
		if err := res.reload(r, t, p, st, undo); err != nil {
			return err
		}
	}
	return nil
}

// dropAll removes what a reload dropped, in the reverse order; one
// failure does not stop the others.
func (r *running) dropAll(p reloadPlan) error {
	var errs []error
	for _, res := range reversed() {
		errs = append(errs, res.drop(r, p))
	}
	return errors.Join(errs...)
}

// removeAll is on_exit remove: every kind cfg names, in the reverse order.
func (r *running) removeAll(cfg Config) error {
	var errs []error
	for _, res := range reversed() {
		errs = append(errs, res.remove(r, cfg))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("on_exit remove: %w", err)
	}
	r.log.Info("exiting; on_exit remove: configured policies detached, namespace schedulers reset, schedulers and algorithms unloaded")
	return nil
}
