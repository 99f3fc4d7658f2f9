package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// Reload asks for the configuration to be read again (ReadConfig) and
	// the difference applied (SIGHUP). Nil: no reloads.
	Reload <-chan struct{}
	// ReadConfig returns the configuration a reload applies, validated
	// (ReadConfigFile with the command line's overrides).
	ReadConfig func() (Config, error)
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
	index  int // in the configuration's policies list
	cfg    Policy
	rule   policy.Rule // Cgroup absolute
	action action
}

// running is the daemon once started: what is in force, and what a reload
// swaps.
type running struct {
	cfg     Config // resolved
	st      *state
	pe      PolicyEngine
	log     *slog.Logger
	reg     *prometheus.Registry
	handler *swapHandler
	srv     *metrics.Server
	inForce *policyCollector
	reloads *reloadCollector
	events  *eventWatchers
}

// Run sets everything up, serves until ctx ends (applying a reload each time
// opts.Reload fires), then applies on_exit. A failure while starting undoes
// what it loaded or attached (what it adopted stays as it was) and returns
// the error.
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

	r := &running{cfg: cfg, pe: pe, log: log, handler: &swapHandler{}, inForce: &policyCollector{pe: pe, root: cfg.PolicyBPFFS, log: log}, reloads: newReloadCollector(time.Now())}
	r.events = &eventWatchers{col: &events.Collector{}, log: log, stop: map[string]context.CancelFunc{}}
	if r.reg, err = metrics.NewRegistry(r.events.col, r.inForce, r.reloads); err != nil {
		return err
	}
	r.handler.set(r.metricsHandler(cfg))
	// Bind before touching the kernel: a busy port fails the start with
	// nothing loaded.
	if r.srv, err = metrics.Listen(cfg.Metrics.ListenAddress, cfg.Metrics.AllowRemote, r.handler); err != nil {
		return err
	}
	// A reload may replace the server.
	defer func() { _ = r.srv.Close() }()

	r.st = &state{algos: map[string]action{}}
	started := false
	defer func() {
		if err != nil && !started {
			rollback(cfg, pe, r.st, log)
		}
	}()
	if err := setUpAlgorithms(cfg, r.st, log); err != nil {
		return err
	}
	if err := setUpPolicies(cfg, pe, policies, r.st, log); err != nil {
		return err
	}
	started = true
	r.inForce.set(r.st.policies)
	defer r.events.stopAll()
	r.events.sync(ctx, cfg.Events)

	log.Info("serving metrics", "address", "http://"+r.srv.Addr().String()+"/metrics",
		"algorithms", len(cfg.Algorithms), "policies", len(cfg.Policies), "on_exit", string(cfg.OnExit))
	notify("READY=1")
	if opts.Ready != nil {
		opts.Ready(r.srv.Addr())
	}
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-opts.Reload:
			r.reload(ctx, opts.ReadConfig)
		}
	}
	notify("STOPPING=1")
	r.events.stopAll()
	_ = r.srv.Close()

	cfg = r.cfg
	if cfg.OnExit == OnExitKeep {
		log.Info("exiting; on_exit keep: algorithms stay loaded and policies attached", "algorithms", len(cfg.Algorithms), "policies", len(cfg.Policies))
		return nil
	}
	return removeAll(cfg, pe, log)
}

// metricsHandler serves the maps under cfg's root with cfg's bound.
func (r *running) metricsHandler(cfg Config) http.Handler {
	col := metrics.NewCollector(stats.Pinned{Root: cfg.BPFFS}, metrics.Options{MaxSubflows: *cfg.Metrics.MaxSubflows, Logger: r.log})
	return metrics.Handler(col, r.reg)
}

// swapHandler lets a reload change how metrics are built without closing
// the listener, and keeps scrapes out of the moments a reload changes the
// pins: a scrape lists every pin directory, and one caught half made (or
// half removed) would fail the listing, leaving the scrape with no
// algorithm at all.
type swapHandler struct {
	h  atomic.Pointer[http.Handler]
	mu sync.RWMutex
}

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	(*s.h.Load()).ServeHTTP(w, req)
}

// exclusive runs one change of the pins with no scrape running; scrapes
// arriving meanwhile wait for it (one load takes about 0.4 s).
func (s *swapHandler) exclusive(f func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return f()
}

// eventWatchers follows the mptcp_pm events of the configured namespaces.
type eventWatchers struct {
	col  *events.Collector
	log  *slog.Logger
	stop map[string]context.CancelFunc // by namespace; "" is the daemon's own
}

// sync starts following the namespaces e names and stops following the
// others. A namespace that could not be followed is tried again at the
// next sync (a reload).
func (w *eventWatchers) sync(ctx context.Context, e Events) {
	want := []string{}
	if *e.Enabled {
		want = append([]string{""}, e.Namespaces...)
	}
	for ns, stop := range w.stop {
		if !slices.Contains(want, ns) {
			stop()
			delete(w.stop, ns)
			w.col.Remove(ns)
			w.log.Info("stopped following mptcp_pm events", "netns", nsName(ns))
		}
	}
	for _, ns := range want {
		if w.stop[ns] != nil {
			continue
		}
		wctx, stop := context.WithCancel(ctx)
		t := events.NewTracker(0)
		done, err := t.Watch(wctx, ns)
		if err != nil {
			stop()
			w.log.Warn("not following mptcp_pm events", "netns", nsName(ns), "err", err)
			continue
		}
		w.stop[ns] = stop
		w.col.Add(ns, t)
		go func(ns string) {
			if err := <-done; err != nil {
				w.log.Warn("stopped following mptcp_pm events", "netns", nsName(ns), "err", err)
			}
		}(ns)
	}
}

func (w *eventWatchers) stopAll() {
	for ns, stop := range w.stop {
		stop()
		delete(w.stop, ns)
	}
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
		out = append(out, resolvedPolicy{index: i, cfg: p, rule: r})
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
		act, err := setUpAlgorithm(cfg.BPFFS, i, a, byName, log, slog.LevelInfo)
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
// Adoptions are logged at adopted (a reload adopts what it keeps, which is
// not news).
func setUpAlgorithm(root string, i int, a Algorithm, byName map[string]cc.Loaded, log *slog.Logger, adopted slog.Level) (action, error) {
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
	log.Info("loaded", "name", a.Name, "algo", a.Algo, "lisa", a.LISA, "rsf_target", a.RSFTarget)
	return actLoaded, nil
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
	log.Info("policy attached", "cgroup", p.rule.Cgroup, "cc", p.rule.CC, "dst", prefixString(p.rule.Dst), "dst_port", p.rule.DstPort, "tcp", p.rule.PlainTCP)
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
	for i, p := range cfg.Policies {
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
		out = append(out, resolvedPolicy{index: i, cfg: p, rule: r})
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
