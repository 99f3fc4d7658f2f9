package schedmodel

// The questions of bpf/include/sched_pick.h, under the same names.

func usable(f *Subflow) bool { return f.Flags&(Active|MemFree) == Active|MemFree }

// space is sf_space: window room beyond what is in flight and queued, bytes.
func space(f *Subflow) uint32 {
	var w uint64
	if f.Cwnd > f.Inflight {
		w = uint64(f.Cwnd-f.Inflight) * uint64(f.MSS)
	}
	if w > uint64(f.NotSent) {
		return uint32(w - uint64(f.NotSent))
	}
	return 0
}

// tier is sched_tier: the backup flag a subflow must have to be used now.
func tier(c *Conn) uint32 {
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		if usable(&c.SF[i]) && c.SF[i].Flags&Backup == 0 {
			return 0
		}
	}
	return Backup
}

func inTier(f *Subflow, t uint32) bool { return usable(f) && f.Flags&Backup == t }

func idle(f *Subflow) bool { return f.Inflight == 0 && f.NotSent == 0 }

// lowestRTTWhere is sched_lowest_rtt_where.
func lowestRTTWhere(c *Conn, needSpace, needIdle bool) int {
	t, bestRTT, best := tier(c), ^uint32(0), -1
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		f := &c.SF[i]
		if !inTier(f, t) || needSpace && space(f) == 0 || needIdle && !idle(f) {
			continue
		}
		if f.SRTTUs < bestRTT {
			bestRTT, best = f.SRTTUs, i
		}
	}
	return best
}

// lowestRTT is sched_lowest_rtt.
func lowestRTT(c *Conn, needSpace bool) int { return lowestRTTWhere(c, needSpace, false) }

// choose is sched_choose.
func choose(c *Conn, i int, o *Out) {
	if i < 0 || i >= MaxSubflows {
		return
	}
	s := space(&c.SF[i])
	o.Mask |= 1 << i
	o.Burst = max(s, c.SF[i].MSS)
}

// retransOnBest is SCHED_RETRANS_ON_BEST.
func retransOnBest(c *Conn) Out {
	var o Out
	choose(c, lowestRTTWhere(c, false, true), &o)
	return o
}
