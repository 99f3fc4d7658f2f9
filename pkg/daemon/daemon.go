// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

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
	Sched  SchedEngine  // nil: KernelSched
	Paths  PathEngine   // nil: KernelPaths
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
var ErrNotPrivileged = errors.New("needs root (or CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN)")

func checkPrivileges() error {
	eff, err := capEffective()
	if err != nil {
		return err
	}
	if kernel.Sufficient(eff) {
		return nil
	}
	return fmt.Errorf("mptcp-cc serve %w: it loads BPF congestion controls and attaches cgroup programs; run it as root, from the systemd unit (deploy/mptcp-cc.service) or with the capabilities of deploy/kubernetes/daemonset.yaml", ErrNotPrivileged)
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
	scheds   map[string]action // by name
	netns    []netnsSet
}

func newState() *state {
	return &state{algos: map[string]action{}, scheds: map[string]action{}}
}

// running is the daemon once started: what is in force, and what a reload
// swaps.
type running struct {
	cfg     Config // resolved
	st      *state
	pe      PolicyEngine
	se      SchedEngine
	log     *slog.Logger
	reg     *prometheus.Registry
	handler *swapHandler
	srv     *metrics.Server
	inForce *policyCollector
	reloads *reloadCollector
	events  *eventWatchers
	paths   *pathManager
	mib     *metrics.KernelMIB
	// view keeps the kernel's subflow flags for scrapes, which join its
	// last dump instead of waiting for one (stats.KernelView).
	view *stats.KernelView
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
	se := opts.Sched
	if se == nil {
		se = KernelSched{}
	}
	if err := checkPrivileges(); err != nil {
		return err
	}
	if err := checkKernel(cfg, pe); err != nil {
		return err
	}
	r := &running{cfg: cfg, pe: pe, se: se, log: log, handler: &swapHandler{}, inForce: &policyCollector{pe: pe, root: cfg.PolicyBPFFS, log: log}, reloads: newReloadCollector(time.Now()),
		view: stats.NewKernelView(flagsPeriod)}
	t, err := r.checkAll(cfg)
	if err != nil {
		return err
	}
	r.events = &eventWatchers{col: &events.Collector{}, log: log, stop: map[string]context.CancelFunc{}}
	paths := opts.Paths
	if paths == nil {
		paths = KernelPaths{}
	}
	r.paths = newPathManager(paths, log)
	r.mib = &metrics.KernelMIB{Logger: log}
	r.mib.SetNamespaces(mibNamespaces(cfg))
	if r.reg, err = (metrics.Daemon{Events: r.events.col, Policy: r.inForce, Reloads: r.reloads, Pathctl: r.paths.col, MIB: r.mib}).Registry(); err != nil {
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

	// A failure undoes what the start did (setUpAll).
	r.st = newState()
	if err := r.setUpAll(t, r.st); err != nil {
		return err
	}
	r.inForce.set(r.st.policies)
	defer r.events.stopAll()
	r.events.sync(ctx, cfg.Events)
	// Every controller clears its flags before Run returns, whatever
	// on_exit says: a flag left behind would steer connections no one
	// controls.
	defer r.paths.stopAll()
	r.paths.sync(ctx, cfg.Pathctl)

	log.Info("serving metrics", "address", "http://"+r.srv.Addr().String()+"/metrics",
		"algorithms", len(cfg.Algorithms), "policies", len(cfg.Policies), "schedulers", len(cfg.Schedulers),
		"netns_schedulers", len(cfg.NetnsSchedulers), "pathctl_netns", len(cfg.Pathctl.namespaces()), "on_exit", string(cfg.OnExit))
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
	r.paths.stopAll()
	_ = r.srv.Close()

	cfg = r.cfg
	if cfg.OnExit == OnExitKeep {
		log.Info("exiting; on_exit keep: algorithms and schedulers stay loaded, policies and namespace schedulers in force",
			"algorithms", len(cfg.Algorithms), "policies", len(cfg.Policies), "schedulers", len(cfg.Schedulers), "netns_schedulers", len(cfg.NetnsSchedulers))
		return nil
	}
	return r.removeAll(cfg)
}

// mibNamespaces are the network namespaces whose MPTCP MIB counters the
// metrics carry: the daemon's own and every one the configuration names.
func mibNamespaces(cfg Config) []string {
	out := []string{""}
	seen := map[string]bool{"": true}
	for _, list := range [][]string{netnsList(cfg), cfg.Events.Namespaces, cfg.Pathctl.namespaces()} {
		for _, n := range list {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// flagsPeriod is how old the subflows' backup flags in the metrics may be
// (longer where dumping the kernel's sockets takes over 1/20 of it).
const flagsPeriod = 5 * time.Second

// metricsHandler serves the maps under cfg's root with cfg's bound.
func (r *running) metricsHandler(cfg Config) http.Handler {
	col := metrics.NewCollector(stats.Pinned{Root: cfg.BPFFS, SchedRoot: cfg.SchedBPFFS, Netns: netnsList(cfg), LiveFlags: true, View: r.view}, metrics.Options{MaxSubflows: *cfg.Metrics.MaxSubflows, Logger: r.log})
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
