// SPDX-License-Identifier: Apache-2.0

package pathctl

// What a running controller publishes for `mptcp-cc top`: one JSON file per
// process (the daemon or `mptcp-cc pathctl`) in a directory under /run,
// rewritten after each switch. A file is the process's whole state, so a
// reader needs no protocol: it reads every file whose process is alive.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// StateDir is where controllers publish their state by default.
const StateDir = "/run/mptcp-cc/pathctl"

// ConnState is one controlled connection as its controller last decided.
type ConnState struct {
	Netns    string    `json:"netns"` // as the controller names it: "" is its own namespace
	Token    string    `json:"token"` // 8 hex digits
	Apply    Apply     `json:"apply,omitempty"`
	Mode     string    `json:"mode"`           // multipath or best-path
	Trial    bool      `json:"trial"`          // the mode is on trial
	Best     string    `json:"best,omitempty"` // best-path mode: the subflow kept, LOCAL->REMOTE
	Backup   []string  `json:"backup"`         // the subflows it flagged backup
	Reason   string    `json:"reason"`
	Since    time.Time `json:"since"`            // when the controller started
	Changed  time.Time `json:"changed,omitzero"` // the last reported decision
	Switches int       `json:"switches"`         // reported decisions so far
	Error    string    `json:"error,omitempty"`  // the last failure to apply, if the last attempt failed
}

// Label is the mode as the metrics and `top` show it: multipath,
// best-path, or trial (either mode on trial).
func (c ConnState) Label() string {
	if c.Trial {
		return "trial"
	}
	return c.Mode
}

// Update records a reported decision.
func (c *ConnState) Update(e Event) {
	d := e.Decision
	c.Apply, c.Mode, c.Trial, c.Reason = e.Apply, d.Mode.String(), d.Trial, d.Reason
	c.Best, c.Backup = "", []string{}
	if d.Mode == BestPath {
		c.Best = d.Best.String()
	}
	for _, b := range d.Backup {
		c.Backup = append(c.Backup, b.String())
	}
	c.Changed = e.At
	if d.Switched || d.Chosen {
		c.Switches++
	}
	c.Error = ""
	if e.Err != nil {
		c.Error = e.Err.Error()
	}
}

// NewConnState is a connection whose controller just started (in
// multipath mode, warming up).
func NewConnState(ns string, token uint32, at time.Time) ConnState {
	return ConnState{Netns: ns, Token: fmt.Sprintf("%08x", token), Mode: Multipath.String(), Backup: []string{}, Reason: "warming up", Since: at}
}

// State is one process's file.
type State struct {
	PID         int         `json:"pid"`
	Program     string      `json:"program"` // serve or pathctl
	Updated     time.Time   `json:"updated"`
	Connections []ConnState `json:"connections"`
}

// Publisher keeps a process's state file up to date. Writes are coalesced:
// at most one every MinInterval, the last state always written. Safe for
// concurrent use.
type Publisher struct {
	file, program string
	onError       func(error)

	mu      sync.Mutex
	conns   map[string]ConnState // by netns + token
	dirty   chan struct{}
	done    chan struct{}
	closed  bool
	failing bool
}

// MinInterval spaces a Publisher's writes.
const MinInterval = 250 * time.Millisecond

// NewPublisher publishes to dir/<pid>.json (dir is made if missing).
// onError, if not nil, hears the first failure to write of each run of
// failures.
func NewPublisher(dir, program string, onError func(error)) *Publisher {
	p := &Publisher{file: filepath.Join(dir, strconv.Itoa(os.Getpid())+".json"), program: program, onError: onError,
		conns: map[string]ConnState{}, dirty: make(chan struct{}, 1), done: make(chan struct{})}
	go p.loop()
	p.dirty <- struct{}{}
	return p
}

func stateKey(ns, token string) string { return ns + "\x00" + token }

// Set publishes a connection's state.
func (p *Publisher) Set(c ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[stateKey(c.Netns, c.Token)] = c
	p.kick()
}

// Remove stops publishing a connection.
func (p *Publisher) Remove(ns string, token uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, stateKey(ns, fmt.Sprintf("%08x", token)))
	p.kick()
}

// kick asks for a write; p.mu is held.
func (p *Publisher) kick() {
	if p.closed {
		return
	}
	select {
	case p.dirty <- struct{}{}:
	default:
	}
}

func (p *Publisher) loop() {
	defer close(p.done)
	for range p.dirty {
		p.write()
		time.Sleep(MinInterval)
	}
}

func (p *Publisher) write() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	s := State{PID: os.Getpid(), Program: p.program, Updated: time.Now(), Connections: make([]ConnState, 0, len(p.conns))}
	for _, c := range p.conns {
		s.Connections = append(s.Connections, c)
	}
	p.mu.Unlock()
	sort.Slice(s.Connections, func(i, j int) bool {
		a, b := s.Connections[i], s.Connections[j]
		return a.Netns < b.Netns || a.Netns == b.Netns && a.Token < b.Token
	})
	err := writeState(p.file, s)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil && !p.failing && p.onError != nil {
		p.onError(err)
	}
	p.failing = err != nil
}

// writeState replaces the file whole (a reader never sees half of it).
func writeState(file string, s State) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("pathctl state: %w", err)
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("pathctl state: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pathctl state: %w", err)
	}
	return nil
}

// Close stops publishing and removes the file.
func (p *Publisher) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.dirty)
	p.mu.Unlock()
	<-p.done
	if err := os.Remove(p.file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// ReadStates returns the state of every live controller process that
// publishes in dir; a missing dir is none. Files of processes that are
// gone (killed before they could remove them) are skipped.
func ReadStates(dir string) ([]State, error) {
	files, err := stateFiles(dir)
	var out []State
	errs := []error{err}
	for _, f := range files {
		if f.gone {
			continue
		}
		s, err := readState(f.path)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed as its process stopped
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// stateFile is one <pid>.json in a state directory.
type stateFile struct {
	path string
	pid  int
	gone bool // no process has the pid: killed before it removed the file
}

// stateFiles lists dir's state files; a missing dir has none.
func stateFiles(dir string) ([]stateFile, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []stateFile
	for _, e := range ents {
		name := e.Name()
		pid, err := strconv.Atoi(strings.TrimSuffix(name, ".json"))
		if !strings.HasSuffix(name, ".json") || err != nil || pid <= 0 {
			continue
		}
		out = append(out, stateFile{filepath.Join(dir, name), pid, errors.Is(unix.Kill(pid, 0), unix.ESRCH)})
	}
	return out, nil
}

func readState(file string) (State, error) {
	var s State
	b, err := os.ReadFile(file)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", file, err)
	}
	return s, nil
}
