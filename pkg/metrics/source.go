package metrics

import (
	"fmt"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// Snapshot is what one scrape reads from the kernel: the congestion controls
// loaded under a pin root and every live subflow that runs one of them.
type Snapshot struct {
	Loaded   []cc.Loaded
	Subflows []stats.Subflow
}

// Source produces a fresh Snapshot for every scrape.
type Source interface {
	Snapshot() (Snapshot, error)
}

// PinSource reads the pinned maps under Root (cc.DefaultPinRoot if empty).
type PinSource struct{ Root string }

// Snapshot lists the loaded congestion controls and reads their subflow maps.
// A map that cannot be read is reported in the error while the others are
// still returned, so one broken pin does not blank the whole scrape.
func (p PinSource) Snapshot() (Snapshot, error) {
	loaded, err := cc.List(p.Root)
	if err != nil {
		return Snapshot{}, fmt.Errorf("listing loaded congestion controls under %s: %w", p.root(), err)
	}
	snap := Snapshot{Loaded: loaded}
	var firstErr error
	for _, l := range loaded {
		m, err := cc.OpenSubflows(p.Root, l.Name)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		coupled := ""
		if a, err := cc.Lookup(l.Algo); err == nil {
			coupled = a.Coupled
		}
		subs, err := stats.ReadMap(m, l.Name, l.Algo, coupled)
		m.Close()
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("reading subflows of %s: %w", l.Name, err)
		}
		snap.Subflows = append(snap.Subflows, subs...)
	}
	stats.Sort(snap.Subflows)
	return snap, firstErr
}

func (p PinSource) root() string {
	if p.Root == "" {
		return cc.DefaultPinRoot
	}
	return p.Root
}

// StaticSource returns the same snapshot every time (tests, benchmarks).
type StaticSource Snapshot

// Snapshot returns s.
func (s StaticSource) Snapshot() (Snapshot, error) { return Snapshot(s), nil }
