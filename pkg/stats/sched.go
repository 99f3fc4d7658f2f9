// SPDX-License-Identifier: Apache-2.0

package stats

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"

	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

// SchedCounters is what one of mptcp-cc's packet schedulers (pkg/sched)
// gave a subflow: Subflow.Sched, joined by JoinSched.
type SchedCounters struct {
	Name       string `json:"name"` // the loaded scheduler's registered name
	Algo       string `json:"algo"` // which of ours it is ("" if its parameters are unreadable)
	Sends      uint64 `json:"sends"`
	Retrans    uint64 `json:"retrans"` // reinjections (get_retrans decisions) that picked the subflow
	BurstBytes uint64 `json:"burst_bytes"`
}

// NetnsScheduler is the scheduler a network namespace gives new MPTCP
// connections (net.mptcp.scheduler).
type NetnsScheduler struct {
	Netns     string `json:"netns"` // "" is the reader's own
	Scheduler string `json:"scheduler"`
}

// schedKey is how a scheduler's record and a congestion control's record
// name the same subflow: the kernel's subflow ids and the records' own ids
// are not shared, while a token is only unique within a namespace, which
// the addresses settle.
type schedKey struct {
	token         uint32
	local, remote netip.AddrPort
}

// JoinSched sets Sched on every MPTCP subflow that a loaded scheduler
// (one of loaded) has counters for, and returns the counters that matched
// no subflow: subflows that run none of the source's congestion controls,
// and closed ones the scheduler's map still holds (it is an LRU map: they
// stay until newer subflows push them out). A subflow two schedulers have
// counters for (a scheduler unloaded and loaded again while it lived)
// takes the first in counters' order.
func JoinSched(subs []Subflow, loaded []sched.Loaded, counters []sched.SubflowStats) (unjoined []sched.SubflowStats) {
	for i := range subs {
		subs[i].Sched = nil
	}
	if len(counters) == 0 {
		return nil // no scheduler of ours: no index to build at every scrape
	}
	algo := make(map[string]string, len(loaded))
	for _, l := range loaded {
		algo[l.Name] = l.Algorithm
	}
	idx := make(map[schedKey]int, len(subs))
	for i := range subs {
		if subs[i].MPTCP {
			idx[schedKey{subs[i].Token, subs[i].Local, subs[i].Remote}] = i
		}
	}
	for _, st := range counters {
		i, ok := idx[schedKey{st.Token, st.Local, st.Remote}]
		if !ok || subs[i].Sched != nil {
			unjoined = append(unjoined, st)
			continue
		}
		subs[i].Sched = &SchedCounters{Name: st.Scheduler, Algo: algo[st.Scheduler], Sends: st.Sends, Retrans: st.Retrans, BurstBytes: st.BurstBytes}
	}
	return unjoined
}

// readSched adds to snap the packet schedulers pinned under root and their
// counters, joined to snap's subflows, following the Source error policy:
// what could be read is kept, and the error names every scheduler whose
// pins could not be read.
func readSched(snap *Snapshot, root string) error {
	loaded, lerr := sched.List(root)
	if lerr != nil && loaded == nil {
		return fmt.Errorf("listing the packet schedulers loaded under %s: %w", root, lerr)
	}
	counters, serr := sched.Stats(root)
	snap.Schedulers, snap.SchedSubflows = loaded, counters
	JoinSched(snap.Subflows, loaded, counters)
	var errs []error
	if lerr != nil {
		errs = append(errs, fmt.Errorf("packet schedulers under %s: %w", root, lerr))
	}
	if serr != nil {
		errs = append(errs, fmt.Errorf("packet schedulers under %s: %w", root, serr))
	}
	return errors.Join(errs...)
}

// readNetns adds the scheduler of each namespace; one that cannot be read
// (gone, MPTCP disabled) is named in the error and left out.
func readNetns(snap *Snapshot, namespaces []string) error {
	var errs []error
	for _, ns := range namespaces {
		cur, err := sched.Current(ns)
		if err != nil {
			errs = append(errs, fmt.Errorf("the scheduler of network namespace %s: %w", nsLabel(ns), err))
			continue
		}
		snap.Netns = append(snap.Netns, NetnsScheduler{Netns: ns, Scheduler: cur})
	}
	sort.Slice(snap.Netns, func(i, j int) bool { return snap.Netns[i].Netns < snap.Netns[j].Netns })
	return errors.Join(errs...)
}

func nsLabel(ns string) string {
	if ns == "" {
		return "(own)"
	}
	return ns
}
