// SPDX-License-Identifier: Apache-2.0

package schedmodel

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(algo.Info{ID: 2, Summary: "round-robin over the usable subflows, window or not"}, func(a Args) Scheduler { return RR{Packets: a.get(0, 1)} })
}

// RR mirrors bpf/sched/rr.bpf.c: the next usable subflow by kernel id
// after the one used last (State.W[0]), window or not; Packets per turn.
type RR struct{ Packets uint32 }

func (RR) Name() string { return "rr" }

func (r RR) Send(c *Conn, s *State) Out {
	var o Out
	t, last := tier(c), uint32(s.W[0])
	next, first := -1, -1
	var nextID, firstID uint32
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		f := &c.Sf[i]
		if !inTier(f, t) {
			continue
		}
		if first < 0 || f.Id < firstID {
			first, firstID = i, f.Id
		}
		if f.Id > last && (next < 0 || f.Id < nextID) {
			next, nextID = i, f.Id
		}
	}
	if next < 0 {
		next, nextID = first, firstID
	}
	if next < 0 {
		return o
	}
	burst := min(uint64(r.Packets)*uint64(c.Sf[next].Mss), BurstMax)
	o.Mask = 1 << next
	o.Burst = max(uint32(burst), 1)
	s.W[0] = uint64(nextID)
	return o
}

func (RR) Retrans(c *Conn, _ *State) Out { return retransOnBest(c) }
