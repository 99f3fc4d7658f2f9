// SPDX-License-Identifier: Apache-2.0

package pathctl

// What the samples say of each subflow: its delivery rates (the max
// filter that names the best path), whether it is stuck, which are live
// and idle. The engine's rule (engine.go) decides from these; they keep
// no mode.

import (
	"sort"
	"time"
)

type subflowState struct {
	rates       []uint64 // delivery rate per period, newest last (the max filter)
	acked       uint64
	queuedSince time.Time // since when it has had MinQueued or more queued (zero: not now)
	peekRate    uint64    // delivery rate its last peek measured (0: none yet)
	recent      []ackedAt // bytes_acked over the last StallAfter or so, oldest first
	seen        bool
}

// maxRate is the highest delivery rate of the last n periods (0 for a
// subflow not seen).
func (st *subflowState) maxRate(n int) uint64 {
	if st == nil {
		return 0
	}
	var m uint64
	for _, r := range st.rates[max(0, len(st.rates)-n):] {
		m = max(m, r)
	}
	return m
}

type ackedAt struct {
	at    time.Time
	acked uint64
}

// stuck: the subflow has had MinQueued or more queued for StallAfter, and
// at the pace it delivered over that time its queue would take StallDrain
// or longer to drain. A window cut to a few packets on a slow, lossy path
// with a megabyte queued trickles along, but the receiver waits on it all
// the same.
func (st *subflowState) stuck(at time.Time, notSent uint32, cfg Config) bool {
	if st.queuedSince.IsZero() || at.Sub(st.queuedSince) < cfg.StallAfter || len(st.recent) < 2 {
		return false
	}
	first, last := st.recent[0], st.recent[len(st.recent)-1]
	span := last.at.Sub(first.at)
	if span <= 0 {
		return false
	}
	pace := float64(last.acked-first.acked) / span.Seconds() // bytes/s
	return pace*cfg.StallDrain.Seconds() <= float64(notSent)
}
func (e *Engine) maxSRTT(s Sample) time.Duration {
	var m time.Duration
	for _, sf := range s.Subflows {
		m = max(m, sf.SRTT)
	}
	return m
}

// backupsDrained: in best-path mode, no other subflow has data queued.
func (e *Engine) backupsDrained(s Sample) bool {
	for _, sf := range s.Subflows {
		if e.mode == BestPath && sf.ID != e.best && sf.NotSent > 0 {
			return false
		}
	}
	return true
}

// observe updates every subflow's state and returns the bytes acked since
// the previous sample, the stalled subflows and the idle ones.
func (e *Engine) observe(s Sample) (bytes uint64, stalled, idle []SubflowID) {
	seen := map[SubflowID]bool{}
	for _, sf := range s.Subflows {
		seen[sf.ID] = true
		st := e.subflows[sf.ID]
		if st == nil {
			st = &subflowState{}
			e.subflows[sf.ID] = st
		}
		if st.seen && sf.BytesAcked > st.acked {
			bytes += sf.BytesAcked - st.acked
		}
		// tcpi_delivery_rate changes only when an ACK brings a new sample:
		// a subflow with data out or queued that delivered nothing over a
		// period still reports the rate it had before, on a path that has
		// since collapsed. It delivered nothing: 0. (An idle subflow keeps
		// its last rate: it is what the path did when last used.)
		rate := sf.DeliveryRate
		if st.seen && sf.BytesAcked == st.acked && (sf.NotSent > 0 || sf.Unacked > 0) {
			rate = 0
		}
		st.acked, st.seen = sf.BytesAcked, true
		st.recent = append(st.recent, ackedAt{s.At, sf.BytesAcked})
		for len(st.recent) > 2 && s.At.Sub(st.recent[1].at) >= e.cfg.StallAfter {
			st.recent = st.recent[1:]
		}
		if sf.NotSent < e.cfg.MinQueued {
			st.queuedSince = time.Time{}
		} else if st.queuedSince.IsZero() {
			st.queuedSince = s.At
		}
		st.rates = append(st.rates, rate)
		if len(st.rates) > e.cfg.RateWindow {
			st.rates = st.rates[1:]
		}
		if st.stuck(s.At, sf.NotSent, e.cfg) {
			stalled = append(stalled, sf.ID)
		} else if sf.NotSent == 0 {
			idle = append(idle, sf.ID)
		}
	}
	for id := range e.subflows {
		if !seen[id] {
			delete(e.subflows, id)
		}
	}
	sortIDs(stalled)
	sortIDs(idle)
	return bytes, stalled, idle
}

func (e *Engine) live(s Sample) []SubflowID {
	out := make([]SubflowID, 0, len(s.Subflows))
	for _, sf := range s.Subflows {
		out = append(out, sf.ID)
	}
	sortIDs(out)
	return out
}

// bestOf is the subflow with the highest windowed-max delivery rate; ties
// go to the first in address order, so decisions are reproducible.
func (e *Engine) bestOf(ids []SubflowID) SubflowID { return e.bestOfLast(ids, e.cfg.RateWindow) }

// bestOfLast is bestOf over the last n periods' delivery rates only.
func (e *Engine) bestOfLast(ids []SubflowID, n int) SubflowID {
	var best SubflowID
	var top uint64
	for i, id := range ids {
		m := e.subflows[id].maxRate(n)
		if i == 0 || m > top {
			best, top = id, m
		}
	}
	return best
}
func sortIDs(ids []SubflowID) {
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
}

func contains(ids []SubflowID, id SubflowID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func containsLive(ids []SubflowID, id SubflowID) bool { return contains(ids, id) }
