// SPDX-License-Identifier: Apache-2.0

package schedmodel

// The questions of bpf/include/sched_pick.h, under the same names.

func usable(f *Subflow) bool { return f.Flags&(Active|MemFree) == Active|MemFree }

// space is sf_space: window room beyond what is in flight and queued, bytes.
func space(f *Subflow) uint32 {
	var w uint64
	if f.Cwnd > f.Inflight {
		w = uint64(f.Cwnd-f.Inflight) * uint64(f.Mss)
	}
	if w > uint64(f.Notsent) {
		return uint32(w - uint64(f.Notsent))
	}
	return 0
}

// tier is sched_tier: the backup flag a subflow must have to be used now.
func tier(c *Conn) uint32 {
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		if usable(&c.Sf[i]) && c.Sf[i].Flags&Backup == 0 {
			return 0
		}
	}
	return Backup
}

func inTier(f *Subflow, t uint32) bool { return usable(f) && f.Flags&Backup == t }

func idle(f *Subflow) bool { return f.Inflight == 0 && f.Notsent == 0 }

// What lowestRTTWhere asks besides the tier (SCHED_PICK_*).
const (
	pickSpace  = 1 // window room
	pickIdle   = 2 // nothing in flight or queued
	pickAnyBuf = 4 // established is enough: its send buffer may be full
)

// lowestRTTWhere is sched_lowest_rtt_where.
func lowestRTTWhere(c *Conn, need uint32) int {
	t, bestRTT, best := tier(c), ^uint32(0), -1
	must := uint32(Active | MemFree)
	if need&pickAnyBuf != 0 {
		must = Active
	}
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		f := &c.Sf[i]
		if f.Flags&must != must || f.Flags&Backup != t {
			continue
		}
		if need&pickSpace != 0 && space(f) == 0 || need&pickIdle != 0 && !idle(f) {
			continue
		}
		if f.SrttUs < bestRTT {
			bestRTT, best = f.SrttUs, i
		}
	}
	return best
}

// lowestRTT is sched_lowest_rtt.
func lowestRTT(c *Conn, needSpace bool) int {
	if needSpace {
		return lowestRTTWhere(c, pickSpace)
	}
	return lowestRTTWhere(c, 0)
}

// choose is sched_choose.
func choose(c *Conn, i int, o *Out) {
	if i < 0 || i >= MaxSubflows {
		return
	}
	s := space(&c.Sf[i])
	o.Mask |= 1 << i
	o.Burst = max(s, c.Sf[i].Mss)
}

// retransOnBest is SCHED_RETRANS_ON_BEST.
func retransOnBest(c *Conn) Out {
	var o Out
	choose(c, lowestRTTWhere(c, pickIdle), &o)
	return o
}
