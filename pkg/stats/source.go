// SPDX-License-Identifier: Apache-2.0

package stats

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

// Snapshot is one read of the per-subflow maps: the congestion controls the
// source covers and every live subflow that runs one of them.
type Snapshot struct {
	// Loaded lists the congestion controls the source covers, sorted by
	// name, including those whose map could not be read.
	Loaded []cc.Loaded
	// Subflows holds every subflow read, sorted with Sort; Sched is set on
	// those a loaded packet scheduler has counters for (JoinSched).
	Subflows []Subflow
	// Schedulers lists the packet schedulers the source covers, sorted by
	// name (none unless the source reads them: Pinned.SchedRoot).
	Schedulers []sched.Loaded
	// SchedSubflows holds every per-subflow counter record of those
	// schedulers, joined or not, sorted by token and subflow id.
	SchedSubflows []sched.SubflowStats
	// Netns holds the scheduler of each network namespace the source
	// follows (Pinned.Netns), sorted by namespace.
	Netns []NetnsScheduler
}

// Count returns how many of the snapshot's subflows run the congestion
// control registered as name.
func (s Snapshot) Count(name string) int {
	n := 0
	for i := range s.Subflows {
		if s.Subflows[i].CC == name {
			n++
		}
	}
	return n
}

// Source is the one way to read mptcp-cc's per-subflow BPF state.
//
// Error policy, the same for every implementation: Read reads every map it
// can and returns what it read, sorted with Sort, together with an error
// that joins (errors.Join) one *CCError per congestion control whose map
// could not be read, so the error names each of them, and, for a source
// that reads them, one error per packet scheduler whose pins and per
// network namespace whose scheduler could not be read. A non-nil error
// therefore does not make the Snapshot invalid: the CLI fails on it, the
// metrics exporter exports what it has and reports the failure, the lab
// logs it and keeps sampling. Only when the source cannot even tell which
// congestion controls exist (the pin root cannot be listed) is the Snapshot
// empty, with an error that says why.
type Source interface {
	Read() (Snapshot, error)
}

// CCError is the failure to read one congestion control's subflows.
type CCError struct {
	CC  string // registered name
	Err error
}

func (e *CCError) Error() string { return fmt.Sprintf("reading subflows of %s: %v", e.CC, e.Err) }

func (e *CCError) Unwrap() error { return e.Err }

// Pinned reads every congestion control loaded under a bpffs pin root (the
// CLI, the daemon's exporter). Each Read opens the pinned maps afresh, so it
// sees what was loaded or unloaded since the last one.
type Pinned struct {
	Root string // cc.DefaultPinRoot if empty
	// SchedRoot, if set, is the pin root of the packet schedulers
	// (pkg/sched) whose per-subflow counters the snapshot carries.
	SchedRoot string
	// Netns are the network namespaces whose scheduler the snapshot
	// reports ("" is the reader's own).
	Netns []string
	// LiveFlags: the subflows' backup flags are the kernel's now
	// (JoinKernel over KernelSockets), not the map's from their start.
	LiveFlags bool
	// View, with LiveFlags, gives the kernel's sockets from its last
	// dump instead of a dump now: flags up to its period old, for a
	// reader that must not wait for the dump (see KernelView).
	View *KernelView
}

// Read implements Source.
func (p Pinned) Read() (Snapshot, error) {
	loaded, err := cc.List(p.Root)
	if err != nil {
		root := p.Root
		if root == "" {
			root = cc.DefaultPinRoot
		}
		return Snapshot{}, fmt.Errorf("listing the congestion controls loaded under %s: %w", root, err)
	}
	snap := Snapshot{Loaded: loaded}
	var errs []error
	for _, l := range loaded {
		m, err := cc.OpenSubflows(p.Root, l.Name)
		if err != nil {
			errs = append(errs, &CCError{CC: l.Name, Err: err})
			continue
		}
		subs, err := readMap(m, l.Name, l.Algo, coupledName(l.Algo))
		m.Close()
		if err != nil {
			errs = append(errs, &CCError{CC: l.Name, Err: err})
		}
		snap.Subflows = append(snap.Subflows, subs...)
	}
	Sort(snap.Subflows)
	switch {
	case p.LiveFlags && p.View != nil:
		socks, _ := p.View.Sockets()
		JoinKernel(snap.Subflows, socks)
	case p.LiveFlags:
		JoinKernel(snap.Subflows, KernelSockets())
	}
	if p.SchedRoot != "" {
		if err := readSched(&snap, p.SchedRoot); err != nil {
			errs = append(errs, err)
		}
	}
	if err := readNetns(&snap, p.Netns); err != nil {
		errs = append(errs, err)
	}
	return snap, errors.Join(errs...)
}

// Map is one subflows map whose handle the caller holds.
type Map struct {
	CC   string    // registered name
	Algo string    // algorithm, e.g. olia
	Map  *ebpf.Map // the caller keeps it open while the source is used
}

// Maps reads the map handles a process holds for the congestion controls it
// loaded itself (the lab). A nil handle counts as unreadable.
type Maps []Map

// Read implements Source.
func (ms Maps) Read() (Snapshot, error) {
	var (
		snap Snapshot
		errs []error
	)
	for _, m := range ms {
		snap.Loaded = append(snap.Loaded, cc.Loaded{Name: m.CC, Algo: m.Algo})
		if m.Map == nil {
			errs = append(errs, &CCError{CC: m.CC, Err: errors.New("no map handle")})
			continue
		}
		subs, err := readMap(m.Map, m.CC, m.Algo, coupledName(m.Algo))
		if err != nil {
			errs = append(errs, &CCError{CC: m.CC, Err: err})
		}
		snap.Subflows = append(snap.Subflows, subs...)
	}
	sortLoaded(snap.Loaded)
	Sort(snap.Subflows)
	return snap, errors.Join(errs...)
}

// Static is a Source that returns the same snapshot every time (tests,
// benchmarks).
type Static Snapshot

// Read implements Source.
func (s Static) Read() (Snapshot, error) { return Snapshot(s), nil }

// ReadAll is Pinned{Root: root}.Read() for callers that want only the
// subflows; it follows the Source error policy.
func ReadAll(root string) ([]Subflow, error) {
	snap, err := Pinned{Root: root}.Read()
	return snap.Subflows, err
}

func coupledName(algo string) string {
	if a, err := cc.Lookup(algo); err == nil {
		return a.Coupled
	}
	return ""
}
