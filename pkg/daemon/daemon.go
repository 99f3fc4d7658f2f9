package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/events"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// PolicyEngine is what the daemon needs of pkg/policy; tests use a fake.
type PolicyEngine interface {
	Attach(r policy.Rule, root string) error
	DetachRule(cgroup string, id uint32, root string) error
	List(root string) ([]policy.Attachment, error)
	// ResolveCgroup returns the absolute path of a cgroup v2 directory
	// (relative paths are taken from the cgroup v2 mount) or why it is not one.
	ResolveCgroup(dir string) (string, error)
}

// KernelPolicy is the real engine: pkg/policy.
type KernelPolicy struct{}

// Attach implements PolicyEngine.
func (KernelPolicy) Attach(r policy.Rule, root string) error { return policy.Attach(r, root) }

// DetachRule implements PolicyEngine.
func (KernelPolicy) DetachRule(cgroup string, id uint32, root string) error {
	return policy.DetachRule(cgroup, id, root)
}

// List implements PolicyEngine.
func (KernelPolicy) List(root string) ([]policy.Attachment, error) { return policy.List(root) }

// ResolveCgroup implements PolicyEngine.
func (KernelPolicy) ResolveCgroup(dir string) (string, error) {
	p := dir
	if !filepath.IsAbs(p) {
		mnt, err := policy.CgroupMount()
		if err != nil {
			return "", fmt.Errorf("cgroup %s is relative but no cgroup v2 hierarchy is mounted: %w", dir, err)
		}
		p = filepath.Join(mnt, p)
	}
	abs, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("cgroup %s does not exist (create it with mkdir, or fix the path)", p)
		}
		return "", fmt.Errorf("cgroup %s: %w", p, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(abs, &fs); err != nil {
		return "", fmt.Errorf("cgroup %s: %w", abs, err)
	}
	if fs.Type != unix.CGROUP2_SUPER_MAGIC {
		mnt, _ := policy.CgroupMount()
		return "", fmt.Errorf("%s is not a cgroup v2 directory (the cgroup v2 hierarchy is mounted at %s)", abs, mnt)
	}
	return abs, nil
}

// Options are what Run needs besides the configuration.
type Options struct {
	Logger *slog.Logger
	Policy PolicyEngine // nil: KernelPolicy
	// Ready, if set, is called once everything is in place and the metrics
	// are served, with the metrics address.
	Ready func(addr net.Addr)
}

// capEffective returns the effective capability set (a variable so tests
// can simulate an unprivileged process).
var capEffective = kernel.EffectiveCapabilities

// ErrNotPrivileged is returned when the daemon lacks the capabilities to
// load BPF and attach to cgroups.
var ErrNotPrivileged = errors.New("needs root (or CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON and CAP_SYS_ADMIN)")

func checkPrivileges() error {
	eff, err := capEffective()
	if err != nil {
		return err
	}
	if kernel.Sufficient(eff) {
		return nil
	}
	return fmt.Errorf("mptcp-cc serve %w: it loads BPF congestion controls and attaches cgroup programs; run it as root or from the systemd unit (deploy/mptcp-cc.service)", ErrNotPrivileged)
}

// action records what the daemon did with one configured item.
type action string

const (
	actLoaded  action = "loaded"
	actAdopted action = "adopted"
	actUpdated action = "adopted, parameters updated"
)

// state is what one run set up, to undo it on a failed start or on exit.
type state struct {
	algos    map[string]action // by name
	policies []resolvedPolicy
}

type resolvedPolicy struct {
	cfg    Policy
	rule   policy.Rule // Cgroup absolute
	action action
}

// Run sets everything up, serves until ctx ends, then applies on_exit.
// A failure while starting undoes what this run loaded or attached (what
// it adopted stays as it was) and returns the error.
func Run(ctx context.Context, cfg Config, opts Options) (err error) {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.Resolve()
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	pe := opts.Policy
	if pe == nil {
		pe = KernelPolicy{}
	}
	if err := checkPrivileges(); err != nil {
		return err
	}
	policies, err := preflight(cfg, pe)
	if err != nil {
		return err
	}

	col := metrics.NewCollector(stats.Pinned{Root: cfg.BPFFS}, metrics.Options{MaxSubflows: *cfg.Metrics.MaxSubflows, Logger: log})
	trackers := &events.Collector{}
	inForce := &policyCollector{pe: pe, root: cfg.PolicyBPFFS, log: log}
	reg, err := metrics.NewRegistry(trackers, inForce)
	if err != nil {
		return err
	}
	// Bind before touching the kernel: a busy port fails the start with
	// nothing loaded.
	srv, err := metrics.Listen(cfg.Metrics.ListenAddress, cfg.Metrics.AllowRemote, metrics.Handler(col, reg))
	if err != nil {
		return err
	}
	defer srv.Close()

	st := &state{algos: map[string]action{}}
	defer func() {
		if err != nil {
			rollback(cfg, pe, st, log)
		}
	}()
	if err := setUpAlgorithms(cfg, st, log); err != nil {
		return err
	}
	if err := setUpPolicies(cfg, pe, policies, st, log); err != nil {
		return err
	}
	inForce.set(st.policies)

	evctx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	if *cfg.Events.Enabled {
		for _, ns := range append([]string{""}, cfg.Events.Namespaces...) {
			t := events.NewTracker(0)
			done, err := t.Watch(evctx, ns)
			if err != nil {
				log.Warn("not following mptcp_pm events", "netns", nsName(ns), "err", err)
				continue
			}
			trackers.Add(ns, t)
			go func(ns string) {
				if err := <-done; err != nil {
					log.Warn("stopped following mptcp_pm events", "netns", nsName(ns), "err", err)
				}
			}(ns)
		}
	}

	log.Info("serving metrics", "address", "http://"+srv.Addr().String()+"/metrics",
		"algorithms", len(cfg.Algorithms), "policies", len(cfg.Policies), "on_exit", string(cfg.OnExit))
	notify("READY=1")
	if opts.Ready != nil {
		opts.Ready(srv.Addr())
	}
	<-ctx.Done()
	notify("STOPPING=1")
	stopEvents()
	_ = srv.Close()

	if cfg.OnExit == OnExitKeep {
		log.Info("exiting; on_exit keep: algorithms stay loaded and policies attached", "algorithms", len(cfg.Algorithms), "policies", len(cfg.Policies))
		return nil
	}
	return removeAll(cfg, pe, log)
}

func nsName(ns string) string {
	if ns == "" {
		return "(own)"
	}
	return ns
}

// preflight checks everything that can be checked without changing the
// kernel, so a bad configuration fails with nothing loaded.
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
		r := policy.Rule{Cgroup: abs, CC: p.CC, DstPort: p.DstPort, PlainTCP: p.TCP}
		if p.Dst != "" {
			r.Dst, _ = parseDst(p.Dst)
		}
		out = append(out, resolvedPolicy{cfg: p, rule: r})
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

// setUpAlgorithms loads each configured algorithm, or adopts it when a
// previous run (or `mptcp-cc load`) left it pinned: same algorithm, same
// parameters: nothing to do; other parameters: they are updated in place
// (running subflows see them at their next ACK); another algorithm under
// that name: an error.
func setUpAlgorithms(cfg Config, st *state, log *slog.Logger) error {
	loaded, err := cc.List(cfg.BPFFS)
	if err != nil {
		return err
	}
	byName := map[string]cc.Loaded{}
	for _, l := range loaded {
		byName[l.Name] = l
	}
	for i, a := range cfg.Algorithms {
		alg, err := cc.Lookup(a.Algo)
		if err != nil {
			return err
		}
		field := fmt.Sprintf("algorithms[%d]", i)
		if l, ok := byName[a.Name]; ok {
			if !l.Registered {
				log.Warn("stale pins (the kernel no longer lists it): removing them and loading afresh", "name", a.Name, "pins", l.PinDir)
				if err := cc.Unload(a.Name, cfg.BPFFS); err != nil {
					return fmt.Errorf("%s: removing the stale pins of %s: %w", field, a.Name, err)
				}
			} else {
				if l.Algo != a.Algo {
					return fmt.Errorf("%s: %s is already loaded as %s, the configuration wants %s: unload it first (`mptcp-cc unload --name %s`) or give the entry another name", field, a.Name, l.Algo, a.Algo, a.Name)
				}
				if l.Params == a.Params() {
					st.algos[a.Name] = actAdopted
					log.Info("adopted", "name", a.Name, "algo", a.Algo)
					continue
				}
				if err := cc.SetParams(cfg.BPFFS, a.Name, a.Params()); err != nil {
					return fmt.Errorf("%s: updating the parameters of the loaded %s: %w", field, a.Name, err)
				}
				st.algos[a.Name] = actUpdated
				log.Info("adopted; parameters updated in place", "name", a.Name, "algo", a.Algo,
					"was", fmt.Sprintf("%+v", l.Params), "now", fmt.Sprintf("%+v", a.Params()))
				continue
			}
		}
		if err := cc.Load(alg, cc.Options{Name: a.Name, PinRoot: cfg.BPFFS, Params: a.Params()}); err != nil {
			return fmt.Errorf("%s: loading %s as %s: %w", field, a.Algo, a.Name, err)
		}
		st.algos[a.Name] = actLoaded
		log.Info("loaded", "name", a.Name, "algo", a.Algo, "lisa", a.LISA, "rsf_target", a.RSFTarget)
	}
	return nil
}

// sameRule compares what a policy rule selects and gives.
func sameRule(info policy.RuleInfo, r policy.Rule) bool {
	return info.CC == r.CC && info.Dst == r.Dst && info.DstPort == r.DstPort && info.PlainTCP == r.PlainTCP
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
	for i, p := range policies {
		field := fmt.Sprintf("policies[%d]", i)
		existing := rulesOf(attached, p.rule.Cgroup)
		if slices.ContainsFunc(existing, func(r policy.RuleInfo) bool { return sameRule(r, p.rule) }) {
			p.action = actAdopted
			log.Info("policy adopted", "cgroup", p.rule.Cgroup, "cc", p.rule.CC, "dst", prefixString(p.rule.Dst), "dst_port", p.rule.DstPort)
		} else {
			if err := pe.Attach(p.rule, cfg.PolicyBPFFS); err != nil {
				return fmt.Errorf("%s: attaching to cgroup %s: %w", field, p.rule.Cgroup, err)
			}
			p.action = actLoaded
			if slices.ContainsFunc(existing, func(r policy.RuleInfo) bool { return sameSelector(r, p.rule) }) {
				p.action = actUpdated
			}
			log.Info("policy attached", "cgroup", p.rule.Cgroup, "cc", p.rule.CC, "dst", prefixString(p.rule.Dst), "dst_port", p.rule.DstPort, "tcp", p.rule.PlainTCP)
		}
		st.policies = append(st.policies, p)
	}
	return nil
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

// removeAll is on_exit remove: the configured policies' rules, then the
// configured algorithms, adopted or not.
func removeAll(cfg Config, pe PolicyEngine, log *slog.Logger) error {
	var errs []error
	if len(cfg.Policies) > 0 {
		if err := detachPolicies(cfg, pe, policiesForRemoval(cfg, pe)); err != nil {
			errs = append(errs, err)
		}
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
	log.Info("exiting; on_exit remove: configured policies detached and algorithms unloaded")
	return nil
}

// policiesForRemoval resolves the configured rules; a cgroup removed
// meanwhile is matched by the path the policy recorded.
func policiesForRemoval(cfg Config, pe PolicyEngine) []resolvedPolicy {
	var out []resolvedPolicy
	for _, p := range cfg.Policies {
		abs, err := pe.ResolveCgroup(p.Cgroup)
		if err != nil {
			abs = p.Cgroup
			if mnt, err := policy.CgroupMount(); err == nil && !filepath.IsAbs(abs) {
				abs = filepath.Join(mnt, abs)
			}
		}
		r := policy.Rule{Cgroup: abs, CC: p.CC, DstPort: p.DstPort, PlainTCP: p.TCP}
		if p.Dst != "" {
			r.Dst, _ = parseDst(p.Dst)
		}
		out = append(out, resolvedPolicy{cfg: p, rule: r})
	}
	return out
}

// policyCollector exports the rules the daemon keeps in force, and the
// error counters of every policy pinned under the policy root: those
// attached with `mptcp-cc policy attach` fail the same way, and the
// counter is per cgroup program, not per rule.
type policyCollector struct {
	pe   PolicyEngine
	root string
	log  *slog.Logger

	mu       sync.Mutex
	policies []resolvedPolicy
}

func (c *policyCollector) set(ps []resolvedPolicy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.policies = ps
}

var (
	descPolicy = prometheus.NewDesc("mptcp_cc_policy_rule_info",
		"A per-cgroup policy rule the daemon keeps in force; the value is always 1.",
		[]string{"cgroup", "cc", "dst", "dst_port", "tcp"}, nil)
	descPolicyErrors = prometheus.NewDesc("mptcp_cc_policy_errors_total",
		"Sockets whose congestion control a cgroup's policy program failed to set (bpf_setsockopt failed, e.g. the CC was unloaded).",
		[]string{"cgroup"}, nil)
)

func (c *policyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPolicy
	ch <- descPolicyErrors
}

func (c *policyCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.policies {
		ch <- prometheus.MustNewConstMetric(descPolicy, prometheus.GaugeValue, 1,
			p.rule.Cgroup, p.rule.CC, prefixString(p.rule.Dst), strconv.Itoa(int(p.rule.DstPort)), strconv.FormatBool(p.rule.PlainTCP))
	}
	if c.pe == nil {
		return
	}
	atts, err := c.pe.List(c.root)
	if err != nil {
		// The CC metrics are still worth serving; the log says why these
		// are missing.
		c.log.Warn("reading the policies' counters", "policy_bpffs", c.root, "err", err)
		return
	}
	for _, a := range atts {
		if !a.Attached {
			continue // the cgroup is gone: its program sees no socket
		}
		ch <- prometheus.MustNewConstMetric(descPolicyErrors, prometheus.CounterValue, float64(a.Counters.Errors), a.Cgroup)
	}
}

// notify tells systemd (Type=notify) about the daemon's state; a no-op
// outside systemd.
func notify(state string) {
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return
	}
	if strings.HasPrefix(sock, "@") {
		sock = "\x00" + sock[1:]
	}
	c, err := net.DialTimeout("unixgram", sock, time.Second)
	if err != nil {
		return
	}
	defer c.Close()
	_, _ = c.Write([]byte(state))
}
