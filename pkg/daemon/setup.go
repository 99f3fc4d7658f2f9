// SPDX-License-Identifier: Apache-2.0

package daemon

// Setting up and taking down what the configuration names: checks before
// anything changes, loading or adopting algorithms, attaching or adopting
// policy rules, and undoing them (a failed start, on_exit remove).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

// preflight checks everything that can be checked without changing the
// kernel, so a bad configuration fails with nothing loaded.
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

func preflight(cfg Config, pe PolicyEngine) ([]resolvedPolicy, error) {
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
	if _, err := cc.List(cfg.BPFFS); err != nil {
		errs = append(errs, fmt.Errorf("reading the algorithms pinned under %s: %w", cfg.BPFFS, err))
	}
	return out, errors.Join(errs...)
}

// setUpAlgorithms loads or adopts each configured algorithm
// (setUpAlgorithm).
func setUpAlgorithms(cfg Config, st *state, log *slog.Logger) error {
	byName, err := pinnedAlgorithms(cfg.BPFFS)
	if err != nil {
		return err
	}
	for i, a := range cfg.Algorithms {
		act, err := setUpAlgorithm(cfg.BPFFS, i, a, byName, cfg.Adopt, log, slog.LevelInfo)
		if err != nil {
			return err
		}
		st.algos[a.Name] = act
	}
	return nil
}

func pinnedAlgorithms(root string) (map[string]cc.Loaded, error) {
	loaded, err := cc.List(root)
	if err != nil {
		return nil, err
	}
	byName := map[string]cc.Loaded{}
	for _, l := range loaded {
		byName[l.Name] = l
	}
	return byName, nil
}

// setUpAlgorithm loads algorithms[i], or adopts it when a previous run (or
// `mptcp-cc load`) left it pinned: same algorithm, same parameters: nothing
// to do; other parameters: they are updated in place (running subflows see
// them at their next ACK); another algorithm under that name: an error.
// Pinned by another build of mptcp-cc, it is upgraded in place first when
// adopt is upgrade, and kept with a warning otherwise. Adoptions are logged
// at adopted (a reload adopts what it keeps, which is not news).
func setUpAlgorithm(root string, i int, a Algorithm, byName map[string]cc.Loaded, adopt Adopt, log *slog.Logger, adopted slog.Level) (action, error) {
	alg, err := cc.Lookup(a.Algo)
	if err != nil {
		return "", err
	}
	field := fmt.Sprintf("algorithms[%d]", i)
	if l, ok := byName[a.Name]; ok {
		if !l.Registered {
			log.Warn("stale pins (the kernel no longer lists it): removing them and loading afresh", "name", a.Name, "pins", l.PinDir)
			if err := cc.Unload(a.Name, root); err != nil {
				return "", fmt.Errorf("%s: removing the stale pins of %s: %w", field, a.Name, err)
			}
		} else {
			if l.Algo != a.Algo {
				return "", fmt.Errorf("%s: %s is already loaded as %s, the configuration wants %s: unload it first (`mptcp-cc unload --name %s`) or give the entry another name", field, a.Name, l.Algo, a.Algo, a.Name)
			}
			if !l.Current() {
				pinned := "an unrecorded build"
				if l.BuildRecorded {
					pinned = l.Build.Version
				}
				if adopt != AdoptUpgrade {
					log.Warn("adopting a registration another build of mptcp-cc loaded: new connections get the pinned build until `mptcp-cc upgrade` (or adopt: upgrade in the configuration)",
						"name", a.Name, "pinned", pinned, "this", cc.ThisBuild().Version)
				} else {
					u, err := cc.Upgrade(a.Name, root, false)
					if err != nil {
						return "", fmt.Errorf("%s: upgrading %s in place (adopt: upgrade): %w", field, a.Name, err)
					}
					log.Info("upgraded in place; connections already open keep the previous build", "name", a.Name, "from", pinned, "to", u.To.Version, "generation", u.To.Generation)
				}
			}
			if l.Params == a.Params() {
				log.Log(context.Background(), adopted, "adopted", "name", a.Name, "algo", a.Algo)
				return actAdopted, nil
			}
			if err := cc.SetParams(root, a.Name, a.Params()); err != nil {
				return "", fmt.Errorf("%s: updating the parameters of the loaded %s: %w", field, a.Name, err)
			}
			log.Info("adopted; parameters updated in place", "name", a.Name, "algo", a.Algo,
				"was", fmt.Sprintf("%+v", l.Params), "now", fmt.Sprintf("%+v", a.Params()))
			return actUpdated, nil
		}
	}
	if err := cc.Load(alg, cc.Options{Name: a.Name, PinRoot: root, Params: a.Params()}); err != nil {
		return "", fmt.Errorf("%s: loading %s as %s: %w", field, a.Algo, a.Name, err)
	}
	log.Info("loaded", "name", a.Name, "algo", a.Algo, "lisa", a.LISA, "rsf_target", a.RSFTarget, "pacing", a.Pacing)
	return actLoaded, nil
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

// rollback undoes what a failed start did: policies it attached, then
// algorithms it loaded. Adopted items stay.
func rollback(cfg Config, pe PolicyEngine, st *state, log *slog.Logger) {
	var mine []resolvedPolicy
	for _, p := range st.policies {
		if p.action == actLoaded {
			mine = append(mine, p)
		}
	}
	if err := detachPolicies(cfg, pe, mine); err != nil {
		log.Error("undoing the policies attached before the failure", "err", err)
	}
	for name, act := range st.algos {
		if act != actLoaded {
			continue
		}
		if err := cc.Unload(name, cfg.BPFFS); err != nil {
			log.Error("undoing the load of "+name, "err", err)
		}
	}
}

// removeAll is on_exit remove: the configured policies' rules, the
// namespaces' and the schedulers (removeSched), then the configured
// algorithms, adopted or not.
func removeAll(cfg Config, pe PolicyEngine, se SchedEngine, log *slog.Logger) error {
	var errs []error
	if len(cfg.Policies) > 0 {
		if err := detachPolicies(cfg, pe, policiesForRemoval(cfg, pe)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeSched(cfg, se, log); err != nil {
		errs = append(errs, err)
	}
	for _, a := range cfg.Algorithms {
		if err := cc.Unload(a.Name, cfg.BPFFS); err != nil {
			if errors.Is(err, cc.ErrNotLoaded) {
				continue
			}
			errs = append(errs, err)
			continue
		}
		log.Info("unloaded", "name", a.Name)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("on_exit remove: %w", err)
	}
	log.Info("exiting; on_exit remove: configured policies detached, namespace schedulers reset, schedulers and algorithms unloaded")
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
