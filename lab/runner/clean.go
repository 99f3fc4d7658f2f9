// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// Everything a lab run creates is named after its run id, so that what a
// killed run leaves behind can be found and removed:
//
//	network namespaces   mplab-<id>-<suffix>-{hK,ra,rc,sM}
//	congestion controls  pinned under /sys/fs/bpf/mptcp-lab/<id>/<name>,
//	                     registered as l<id>_<algo>[l][n]
//	run record           /run/mptcp-lab/<id> (the owner's pid)
//
// Emulated links (TUN devices) and in-process transfers die with the
// process; iperf3 processes are started with a parent-death signal and are
// killed again by namespace when the namespaces are removed.
const (
	NSPrefix   = "mplab-"
	PinBase    = "/sys/fs/bpf/mptcp-lab"
	StateDir   = "/run/mptcp-lab"
	ccIDPrefix = "l"
)

// RunID identifies one invocation of the lab.
type RunID string

// NewRunID returns a fresh id and records the calling process as its owner.
func NewRunID() (RunID, error) {
	id := RunID(topo.Suffix())
	rec := filepath.Join(StateDir, string(id))
	var err error
	// Another run's Release may remove the empty directory in between:
	// create it again and retry.
	for range 5 {
		if err = os.MkdirAll(StateDir, 0o755); err != nil {
			continue
		}
		if err = os.WriteFile(rec, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err == nil {
			break
		}
	}
	if err != nil {
		return "", err
	}
	return id, nil
}

// Check refuses an id that NewRunID could not have made. The id becomes
// part of paths (PinRoot, the run record) that CleanRun removes: "..", a
// '/' or an empty id would reach outside the lab's own directories.
func (id RunID) Check() error {
	if len(id) == 0 || len(id) > 32 {
		return fmt.Errorf("run id %q: want the hex id a run printed (`mptcp-lab clean --list` lists them)", string(id))
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return fmt.Errorf("run id %q: want the hex id a run printed (`mptcp-lab clean --list` lists them)", string(id))
		}
	}
	return nil
}

// NSPrefix is the namespace prefix of the run.
func (id RunID) NSPrefix() string { return NSPrefix + string(id) }

// PinRoot is where the run pins its congestion controls.
func (id RunID) PinRoot() string { return filepath.Join(PinBase, string(id)) }

// Release forgets the run's record (after it cleaned up).
func (id RunID) Release() {
	_ = os.Remove(filepath.Join(StateDir, string(id)))
	_ = os.Remove(StateDir) // only when no other run is recorded
}

// owner returns the pid recorded for a run, 0 if none.
func (id RunID) owner() int {
	b, err := os.ReadFile(filepath.Join(StateDir, string(id)))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// Alive reports whether the run's owner process still exists.
func (id RunID) Alive() bool {
	pid := id.owner()
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Cleaned is what Clean removed.
type Cleaned struct {
	Run        RunID
	Namespaces []string
	CCs        []string
}

// CleanRun removes everything of one run: namespaces (and the processes in
// them), congestion controls and pins, and the run record.
func CleanRun(id RunID) (Cleaned, error) {
	out := Cleaned{Run: id}
	if err := id.Check(); err != nil {
		return out, err
	}
	var errs []error
	names, err := topo.CleanPrefix(id.NSPrefix() + "-")
	out.Namespaces = names
	errs = append(errs, err)
	root := id.PinRoot()
	if loaded, err := cc.List(root); err == nil {
		for _, l := range loaded {
			if err := cc.Unload(l.Name, root); err != nil {
				errs = append(errs, err)
				continue
			}
			out.CCs = append(out.CCs, l.Name)
		}
	} else {
		// Unreadable pins: remove the directories; dropping the pinned
		// link unregisters the congestion control.
		errs = append(errs, err)
	}
	if err := os.RemoveAll(root); err != nil {
		errs = append(errs, err)
	}
	_ = os.Remove(PinBase) // only when empty
	id.Release()
	return out, errors.Join(errs...)
}

// Leftovers lists the runs that have something on the system: namespaces,
// pins or a run record. alive tells whether the owner still runs.
func Leftovers() (map[RunID]bool, error) {
	ids := map[RunID]bool{}
	names, err := topo.ListPrefix(NSPrefix)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		rest := strings.TrimPrefix(n, NSPrefix)
		if i := strings.IndexByte(rest, '-'); i > 0 {
			ids[RunID(rest[:i])] = false
		}
	}
	for _, dir := range []string{PinBase, StateDir} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			ids[RunID(e.Name())] = false
		}
	}
	for id := range ids {
		ids[id] = id.Alive()
	}
	return ids, nil
}

// Clean removes the leftovers of every run whose owner is gone (all runs
// with force). It returns what it removed, sorted by run.
func Clean(force bool) ([]Cleaned, error) {
	ids, err := Leftovers()
	if err != nil {
		return nil, err
	}
	var order []RunID
	for id := range ids {
		order = append(order, id)
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	var out []Cleaned
	var errs []error
	for _, id := range order {
		if ids[id] && !force {
			continue
		}
		c, err := CleanRun(id)
		out = append(out, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", id, err))
		}
	}
	return out, errors.Join(errs...)
}
