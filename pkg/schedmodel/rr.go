// SPDX-License-Identifier: Apache-2.0

package schedmodel

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
		f := &c.SF[i]
		if !inTier(f, t) {
			continue
		}
		if first < 0 || f.ID < firstID {
			first, firstID = i, f.ID
		}
		if f.ID > last && (next < 0 || f.ID < nextID) {
			next, nextID = i, f.ID
		}
	}
	if next < 0 {
		next, nextID = first, firstID
	}
	if next < 0 {
		return o
	}
	burst := min(uint64(r.Packets)*uint64(c.SF[next].MSS), BurstMax)
	o.Mask = 1 << next
	o.Burst = max(uint32(burst), 1)
	s.W[0] = uint64(nextID)
	return o
}

func (RR) Retrans(c *Conn, _ *State) Out { return retransOnBest(c) }
