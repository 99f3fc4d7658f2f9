// SPDX-License-Identifier: Apache-2.0

package daemon

// The path controller in the daemon: it follows the MPTCP connections of
// the configured namespaces as they are established and close, and runs
// one pathctl.Run on each that matches the filter, at most max_connections
// at once. What each controller decides is logged, counted in the metrics
// and published for `mptcp-cc top`.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
)

// pathFilter is the pathctl section's peers and ports.
type pathFilter struct {
	peers []netip.Prefix
	ports []uint16
}

func newPathFilter(p Pathctl) pathFilter {
	f := pathFilter{ports: p.Ports}
	for _, d := range p.Peers {
		if pfx, err := parseDst(d); err == nil {
			f.peers = append(f.peers, pfx)
		}
	}
	return f
}

func (f pathFilter) match(c PathConn) bool {
	if len(f.peers) > 0 && !slices.ContainsFunc(f.peers, func(p netip.Prefix) bool { return p.Contains(c.Remote.Addr().Unmap()) }) {
		return false
	}
	if len(f.ports) > 0 && !slices.Contains(f.ports, c.Local.Port()) && !slices.Contains(f.ports, c.Remote.Port()) {
		return false
	}
	return true
}

type pathKey struct {
	ns    string
	token uint32
}

// entryState is where a known connection stands.
type entryState int

const (
	entryWaiting  entryState = iota // matches, but no slot was free
	entryFiltered                   // does not match the filter
	entryRunning                    // controlled
	entryFailed                     // its controller failed; not retried while it is open
)

// afterStop is what to do with a connection when its controller returns.
type afterStop int

const (
	forget   afterStop = iota // it closed, or its namespace is no longer controlled
	restart                   // the reload changed apply, period or on_stall: control it afresh
	filtered                  // the reload's filter leaves it out
)

// pathEntry is one connection the manager knows of.
type pathEntry struct {
	key     pathKey
	conn    PathConn
	found   time.Time
	state   entryState
	skipped bool // counted in mptcp_cc_pathctl_skipped_total
	cancel  context.CancelFunc
	next    afterStop
	st      pathctl.ConnState
	lastErr string // the last failure to apply, logged once
}

// nsWatch is one namespace being followed.
type nsWatch struct{ cancel context.CancelFunc }

// pathManager runs the controllers.
type pathManager struct {
	eng PathEngine
	log *slog.Logger
	col *metrics.Pathctl

	mu      sync.Mutex
	ctx     context.Context // the daemon's: controllers and watches derive from it
	cfg     Pathctl         // resolved
	filter  pathFilter
	watches map[string]*nsWatch
	conns   map[pathKey]*pathEntry
	active  int
	full    bool // the bound was reached (logged once until a slot frees)
	pub     *pathctl.Publisher
	pubDir  string
	wg      sync.WaitGroup
}

func newPathManager(eng PathEngine, log *slog.Logger) *pathManager {
	return &pathManager{eng: eng, log: log, col: &metrics.Pathctl{}, watches: map[string]*nsWatch{}, conns: map[pathKey]*pathEntry{}}
}

// watchRetry spaces the attempts to follow a namespace that failed (one
// that does not exist yet, say).
var watchRetry = 10 * time.Second

// sync brings the manager to cfg (resolved): it follows the namespaces cfg
// names and stops following the others (their controllers stop, clearing
// their flags); a change of apply, period or on_stall restarts every controller; a
// change of the filter or the bound re-examines every connection.
func (m *pathManager) sync(ctx context.Context, cfg Pathctl) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil {
		m.ctx = ctx
	}
	old := m.cfg
	m.cfg, m.filter = cfg, newPathFilter(cfg)
	want := cfg.namespaces()

	if cfg.Enabled && m.pubDir != cfg.StateDir {
		// Flags a killed controller left on endpoints: cleared before
		// anything is controlled again (its state file says which).
		cleared, err := pathctl.ClearLeftFlags(cfg.StateDir)
		for _, c := range cleared {
			m.log.Info("path controller: cleared a backup flag a killed controller left", "endpoint", c)
		}
		if err != nil {
			m.log.Warn("path controller: clearing the flags a killed controller left", "err", err)
		}
		m.closePublisher()
		m.pub = pathctl.NewPublisher(cfg.StateDir, "serve", func(err error) {
			m.log.Warn("path controller: cannot publish its state for `mptcp-cc top`", "err", err)
		})
		m.pubDir = cfg.StateDir
		for _, e := range m.conns {
			if e.state == entryRunning {
				m.pub.Set(e.st)
			}
		}
	}

	for ns, w := range m.watches {
		if slices.Contains(want, ns) {
			continue
		}
		w.cancel()
		delete(m.watches, ns)
		m.log.Info("path controller: no longer controlling the namespace's connections", "netns", nsName(ns))
	}
	restartAll := old.Apply != cfg.Apply || old.engine() != cfg.engine()
	for k, e := range m.conns {
		switch {
		case !slices.Contains(want, k.ns):
			if e.state == entryRunning {
				e.next = forget
				e.cancel()
			} else {
				delete(m.conns, k)
			}
		case e.state == entryRunning && !m.filter.match(e.conn):
			e.next = filtered
			e.cancel()
		case e.state == entryRunning && restartAll:
			e.next = restart
			e.cancel()
		case e.state == entryFiltered && m.filter.match(e.conn):
			e.state = entryWaiting
		case e.state == entryWaiting && !m.filter.match(e.conn):
			e.state = entryFiltered
		}
	}
	m.fill()

	for _, ns := range want {
		m.col.Namespace(ns)
		if m.watches[ns] != nil {
			continue
		}
		wctx, cancel := context.WithCancel(m.ctx)
		w := &nsWatch{cancel: cancel}
		m.watches[ns] = w
		m.wg.Add(1)
		go m.watch(wctx, ns, w)
	}
	if !cfg.Enabled && m.active == 0 {
		m.closePublisher()
	}
}

func (m *pathManager) closePublisher() {
	if m.pub != nil {
		if err := m.pub.Close(); err != nil {
			m.log.Warn("path controller: removing its state file", "err", err)
		}
		m.pub, m.pubDir = nil, ""
	}
}

// stopAll stops following every namespace and every controller, and waits
// until each has cleared its flags.
func (m *pathManager) stopAll() {
	m.mu.Lock()
	for ns, w := range m.watches {
		w.cancel()
		delete(m.watches, ns)
	}
	for k, e := range m.conns {
		if e.state == entryRunning {
			e.next = forget
			e.cancel()
		} else {
			delete(m.conns, k)
		}
	}
	m.cfg.Enabled = false
	m.mu.Unlock()
	m.wg.Wait()
	m.mu.Lock()
	m.closePublisher()
	m.mu.Unlock()
}

// watch follows one namespace until ctx ends, trying again after a failure.
func (m *pathManager) watch(ctx context.Context, ns string, w *nsWatch) {
	defer m.wg.Done()
	level := slog.LevelWarn
	for {
		err := m.eng.Watch(ctx, ns, func(c ConnChange) { m.change(ns, w, c) })
		if ctx.Err() != nil {
			return
		}
		m.log.Log(ctx, level, "path controller: cannot follow the namespace's connections; trying again", "netns", nsName(ns), "every", watchRetry, "err", err)
		level = slog.LevelDebug
		select {
		case <-ctx.Done():
			return
		case <-time.After(watchRetry):
		}
	}
}

// change applies one report of a namespace's watch.
func (m *pathManager) change(ns string, w *nsWatch, c ConnChange) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watches[ns] != w {
		return // a report that raced the namespace's removal
	}
	switch c.Kind {
	case Watching:
		if c.Why != nil {
			m.log.Warn("path controller: the path manager's events are unavailable; scanning sock_diag instead", "netns", nsName(ns), "every", ScanInterval, "err", c.Why)
		} else {
			m.log.Info("path controller: following the namespace's MPTCP connections", "netns", nsName(ns), "through", c.How)
		}
	case Opened:
		m.found(ns, c.Conn)
	case Closed:
		k := pathKey{ns, c.Conn.Token}
		if e := m.conns[k]; e != nil {
			if e.state == entryRunning {
				e.next = forget
				e.cancel()
			} else {
				delete(m.conns, k)
			}
		}
	case Present:
		open := map[uint32]bool{}
		for _, pc := range c.Conns {
			open[pc.Token] = true
			m.found(ns, pc)
		}
		// Those gone without a CLOSED event (lost, or scanning): a
		// running controller notices by itself.
		for k, e := range m.conns {
			if k.ns == ns && e.state != entryRunning && !open[k.token] {
				delete(m.conns, k)
			}
		}
	}
}

// found takes a connection discovery reported; one already known is left
// as it is.
func (m *pathManager) found(ns string, c PathConn) {
	k := pathKey{ns, c.Token}
	if m.conns[k] != nil || c.Token == 0 {
		return
	}
	e := &pathEntry{key: k, conn: c, found: time.Now()}
	m.conns[k] = e
	m.consider(e)
}

// consider starts controlling e if it matches and a slot is free.
func (m *pathManager) consider(e *pathEntry) {
	if !m.filter.match(e.conn) {
		e.state = entryFiltered
		m.log.Debug("path controller: connection left alone by the filter", "netns", nsName(e.key.ns), "token", tokenString(e.key.token), "local", e.conn.Local, "remote", e.conn.Remote)
		return
	}
	if m.active >= m.cfg.MaxConnections {
		e.state = entryWaiting
		if !e.skipped {
			e.skipped = true
			m.col.Skipped()
		}
		if !m.full {
			m.full = true
			m.log.Warn("path controller: max_connections reached; further connections wait for a free slot", "max_connections", m.cfg.MaxConnections)
		}
		return
	}
	m.start(e)
}

// fill starts waiting connections, oldest first, while slots are free.
func (m *pathManager) fill() {
	for m.active < m.cfg.MaxConnections {
		var next *pathEntry
		for _, e := range m.conns {
			if e.state == entryWaiting && (next == nil || e.found.Before(next.found)) {
				next = e
			}
		}
		if next == nil {
			m.full = false
			return
		}
		m.consider(next)
	}
}

func tokenString(t uint32) string { return fmt.Sprintf("%08x", t) }

func (m *pathManager) start(e *pathEntry) {
	ctx, cancel := context.WithCancel(m.ctx)
	e.state, e.cancel, e.next, e.lastErr = entryRunning, cancel, forget, ""
	e.st = pathctl.NewConnState(e.key.ns, e.key.token, time.Now())
	m.active++
	m.col.Mode(e.key.ns, e.key.token, e.st.Label())
	if m.pub != nil {
		m.pub.Set(e.st)
	}
	m.log.Debug("path controller: controlling a connection", "netns", nsName(e.key.ns), "token", tokenString(e.key.token), "local", e.conn.Local, "remote", e.conn.Remote)
	o := pathctl.Options{NS: e.key.ns, Token: e.key.token, Apply: pathctl.Apply(m.cfg.Apply), Config: m.cfg.engine(),
		Event: func(ev pathctl.Event) { m.event(e, ev) }}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		err := m.eng.Control(ctx, o)
		m.ended(e, err)
	}()
}

// event handles one decision a controller reported: logged, counted,
// published.
func (m *pathManager) event(e *pathEntry, ev pathctl.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := ev.Decision
	e.st.Update(ev)
	ns, token := e.key.ns, tokenString(e.key.token)
	m.col.Mode(e.key.ns, e.key.token, e.st.Label())
	if d.Switched || d.Chosen {
		cause := pathctl.Cause(d)
		m.col.Switched(ns, d.Mode.String(), cause)
		best := "-"
		if d.Mode == pathctl.BestPath {
			best = d.Best.String()
		}
		m.log.Info("path controller switched", "netns", nsName(ns), "token", token, "mode", e.st.Label(), "to", d.Mode.String(), "best", best, "cause", cause, "reason", d.Reason, "apply", string(ev.Apply))
	}
	if ev.Err != nil {
		m.col.ApplyFailed(ns)
		if msg := ev.Err.Error(); msg != e.lastErr {
			e.lastErr = msg
			m.log.Warn("path controller: the kernel refused a flag; retrying every period", "netns", nsName(ns), "token", token, "apply", string(ev.Apply), "err", ev.Err)
		}
	} else {
		e.lastErr = ""
	}
	if m.pub != nil {
		m.pub.Set(e.st)
	}
}

// ended handles a controller's return: its flags are cleared by then.
func (m *pathManager) ended(e *pathEntry, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.cancel()
	m.active--
	m.col.Released(e.key.ns, e.key.token)
	if m.pub != nil {
		m.pub.Remove(e.key.ns, e.key.token)
	}
	ns, token := nsName(e.key.ns), tokenString(e.key.token)
	failed := err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, pathctl.ErrNoConnection)
	if failed {
		m.log.Warn("path controller failed; the connection stays uncontrolled", "netns", ns, "token", token, "err", err)
	} else {
		m.log.Debug("path controller: stopped", "netns", ns, "token", token, "err", err)
	}
	current := m.conns[e.key] == e
	switch {
	case !current:
	case e.next == restart:
		e.state = entryWaiting
		m.consider(e)
	case e.next == filtered:
		e.state = entryFiltered
	case failed && m.watches[e.key.ns] != nil:
		e.state = entryFailed
	default:
		delete(m.conns, e.key)
	}
	m.fill()
	if !m.cfg.Enabled && m.active == 0 {
		m.closePublisher()
	}
}
