// SPDX-License-Identifier: Apache-2.0

package daemon

// The policy rules as a resource: attached or adopted at start, changed
// in place at a reload, detached when dropped or at on_exit remove. A rule
// names an algorithm, so the rules come after the algorithms.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

var policyResource = resource{
	name:  "policies",
	check: checkPolicies,
	setUp: func(r *running, t *target, st *state) error {
		return setUpPolicies(t.cfg, r.pe, t.pols, st, r.log)
	},
	undo: undoPolicies,
	plan: planPolicies,
	reload: func(r *running, t *target, _ reloadPlan, st *state, undo *undoStack) error {
		return r.reloadPolicies(t.cfg, t.pols, st, undo)
	},
	drop: func(r *running, p reloadPlan) error { return detachPolicies(r.cfg, r.pe, p.detach) },
	remove: func(r *running, cfg Config) error {
		if len(cfg.Policies) == 0 {
			return nil
		}
		return detachPolicies(cfg, r.pe, policiesForRemoval(cfg, r.pe))
	},
}

type resolvedPolicy struct {
	index  int // in the configuration's policies list
	cfg    Policy
	rule   policy.Rule // Cgroup absolute
	action action
}

// checkPolicies resolves each rule's cgroup and checks what it gives, and
// that the policies' pins can be read.
func checkPolicies(r *running, t *target) error {
	cfg, pe := t.cfg, r.pe
	var errs []error
	configured := map[string]bool{}
	for _, a := range cfg.Algorithms {
		configured[a.Name] = true
	}
	var out []resolvedPolicy
	for i, p := range cfg.Policies {
		field := fmt.Sprintf("policies[%d]", i)
		abs, err := pe.ResolveCgroup(p.Cgroup)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.cgroup: %w", field, err))
			continue
		}
		if !configured[p.CC] && !cc.IsRegistered(p.CC) {
			regd, _ := cc.Registered()
			errs = append(errs, fmt.Errorf("%s.cc: %q is neither in the algorithms list nor a registered congestion control (registered: %s)", field, p.CC, strings.Join(regd, " ")))
			continue
		}
		if p.DelackMax != 0 {
			if err := policy.CheckDelackMax(p.DelackMax); err != nil {
				errs = append(errs, fmt.Errorf("%s.delack_max: %w", field, err))
				continue
			}
		}
		out = append(out, resolvedPolicy{index: i, cfg: p, rule: p.rule(abs)})
	}
	if len(cfg.Policies) > 0 {
		if _, err := pe.List(cfg.PolicyBPFFS); err != nil {
			errs = append(errs, fmt.Errorf("reading the policies pinned under %s: %w", cfg.PolicyBPFFS, err))
		}
	}
	t.pols = out
	return errors.Join(errs...)
}

// rule is the policy rule a configured policy asks for, in the cgroup
// resolved to abs (Dst was validated with the file).
func (p Policy) rule(abs string) policy.Rule {
	r := policy.Rule{Cgroup: abs, CC: p.CC, DstPort: p.DstPort, PlainTCP: p.TCP, DelackMax: p.DelackMax}
	if p.Dst != "" {
		r.Dst, _ = parseDst(p.Dst)
	}
	return r
}

// sameRule compares what a policy rule selects and gives.
func sameRule(info policy.RuleInfo, r policy.Rule) bool {
	return info.CC == r.CC && info.Dst == r.Dst && info.DstPort == r.DstPort && info.PlainTCP == r.PlainTCP &&
		info.DelackMax == r.DelackMax
}

func sameSelector(info policy.RuleInfo, r policy.Rule) bool {
	return info.Dst == r.Dst && info.DstPort == r.DstPort
}

// setUpPolicies attaches each rule, adopting one already in force.
func setUpPolicies(cfg Config, pe PolicyEngine, policies []resolvedPolicy, st *state, log *slog.Logger) error {
	if len(policies) == 0 {
		return nil
	}
	attached, err := pe.List(cfg.PolicyBPFFS)
	if err != nil {
		return err
	}
	for _, p := range policies {
		p, _, err := setUpPolicy(cfg.PolicyBPFFS, pe, attached, p, log, slog.LevelInfo)
		if err != nil {
			return err
		}
		st.policies = append(st.policies, p)
	}
	return nil
}

// setUpPolicy attaches one rule, or adopts it if attached has it. It
// returns the rule of the same selector it replaced, if any. Adoptions are
// logged at adopted.
func setUpPolicy(root string, pe PolicyEngine, attached []policy.Attachment, p resolvedPolicy, log *slog.Logger, adopted slog.Level) (resolvedPolicy, *policy.RuleInfo, error) {
	existing := rulesOf(attached, p.rule.Cgroup)
	if slices.ContainsFunc(existing, func(r policy.RuleInfo) bool { return sameRule(r, p.rule) }) {
		p.action = actAdopted
		log.Log(context.Background(), adopted, "policy adopted", "cgroup", p.rule.Cgroup, "cc", p.rule.CC, "dst", prefixString(p.rule.Dst), "dst_port", p.rule.DstPort)
		return p, nil, nil
	}
	if err := pe.Attach(p.rule, root); err != nil {
		return p, nil, fmt.Errorf("policies[%d]: attaching to cgroup %s: %w", p.index, p.rule.Cgroup, err)
	}
	p.action = actLoaded
	var replaced *policy.RuleInfo
	if i := slices.IndexFunc(existing, func(r policy.RuleInfo) bool { return sameSelector(r, p.rule) }); i >= 0 {
		p.action = actUpdated
		replaced = &existing[i]
	}
	log.Info("policy attached", "cgroup", p.rule.Cgroup, "cc", p.rule.CC, "dst", prefixString(p.rule.Dst), "dst_port", p.rule.DstPort, "tcp", p.rule.PlainTCP, "delack_max", p.rule.DelackMax)
	return p, replaced, nil
}

func rulesOf(attached []policy.Attachment, cgroup string) []policy.RuleInfo {
	for _, a := range attached {
		if filepath.Clean(a.Cgroup) == filepath.Clean(cgroup) {
			return a.Rules
		}
	}
	return nil
}

func prefixString(p netip.Prefix) string {
	if !p.IsValid() {
		return "any"
	}
	return p.String()
}

// detachPolicies removes the rules of these policies (the cgroup's other
// rules stay; the last rule removed detaches the program).
func detachPolicies(cfg Config, pe PolicyEngine, ps []resolvedPolicy) error {
	if len(ps) == 0 {
		return nil
	}
	attached, err := pe.List(cfg.PolicyBPFFS)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range ps {
		for _, r := range rulesOf(attached, p.rule.Cgroup) {
			if sameRule(r, p.rule) {
				if err := pe.DetachRule(p.rule.Cgroup, r.ID, cfg.PolicyBPFFS); err != nil {
					errs = append(errs, fmt.Errorf("detaching the rule of cgroup %s: %w", p.rule.Cgroup, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// undoPolicies detaches the rules a failed start attached.
func undoPolicies(r *running, cfg Config, st *state) {
	var mine []resolvedPolicy
	for _, p := range st.policies {
		if p.action == actLoaded {
			mine = append(mine, p)
		}
	}
	if err := detachPolicies(cfg, r.pe, mine); err != nil {
		r.log.Error("undoing the policies attached before the failure", "err", err)
	}
}

// policyChange is a rule whose selector (cgroup, dst, dst_port) stays while
// what it gives (cc, tcp) changes.
type policyChange struct{ old, new resolvedPolicy }

// planPolicies compares the rules of two configurations, by selector. The
// pin root cannot move, and a rule cannot name an algorithm the reload
// unloads (planAlgorithms planned that before).
func planPolicies(p *reloadPlan, oldT, nextT *target) ([]string, []error) {
	old, cfg, oldPols, pols := oldT.cfg, nextT.cfg, oldT.pols, nextT.pols
	var errs []error
	if filepath.Clean(old.PolicyBPFFS) != filepath.Clean(cfg.PolicyBPFFS) {
		errs = append(errs, fmt.Errorf("policy_bpffs: %s is in force and the file now says %s: a reload does not move what is pinned; restart the daemon to change it (what is pinned under %s stays until detached)", old.PolicyBPFFS, cfg.PolicyBPFFS, old.PolicyBPFFS))
	}
	oldBySel := map[string]resolvedPolicy{}
	for _, r := range oldPols {
		oldBySel[selectorKey(r.rule)] = r
	}
	newSel := map[string]bool{}
	for _, r := range pols {
		if slices.ContainsFunc(p.unload, func(a Algorithm) bool { return a.Name == r.rule.CC }) {
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

	var out []string
	for _, r := range p.attach {
		out = append(out, "attach "+ruleString(r.rule))
	}
	for _, c := range p.change {
		out = append(out, fmt.Sprintf("change %s -> %s tcp=%v%s", ruleString(c.old.rule), c.new.rule.CC, c.new.rule.PlainTCP, delackString(c.new.rule.DelackMax)))
	}
	for _, r := range p.detach {
		out = append(out, "detach "+ruleString(r.rule))
	}
	return out, errs
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

// policiesForRemoval resolves the configured rules; a cgroup removed
// meanwhile is matched by the path the policy recorded.
func policiesForRemoval(cfg Config, pe PolicyEngine) []resolvedPolicy {
	var out []resolvedPolicy
	for i, p := range cfg.Policies {
		abs, err := pe.ResolveCgroup(p.Cgroup)
		if err != nil {
			abs = p.Cgroup
			if mnt, err := policy.CgroupMount(); err == nil && !filepath.IsAbs(abs) {
				abs = filepath.Join(mnt, abs)
			}
		}
		out = append(out, resolvedPolicy{index: i, cfg: p, rule: p.rule(abs)})
	}
	return out
}
