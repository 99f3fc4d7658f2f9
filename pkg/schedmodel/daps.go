// SPDX-License-Identifier: Apache-2.0

package schedmodel

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(algo.Info{ID: 6, Summary: "delay-aware: the fast path holds the data that lands before the slow path's (Sarwar 2013)"}, func(a Args) Scheduler { return NewDAPS(a) })
}

// DAPS mirrors bpf/sched/daps.bpf.c: the next in-order data goes on a
// slower subflow only once the fastest holds, queued beyond its window,
// the data it sends while that data is on its way (the lead).
type DAPS struct {
	K uint32 // share of the srtt difference that is the one-way one, 1/1024 (arg0)
}

// The constants of daps.bpf.c.
const (
	dapsKDef    = 512
	dapsKOne    = 1024
	dapsRTTCap  = 1 << 24
	dapsCwndCap = 1 << 20
	dapsMSSCap  = 0xffff
	// DAPSFrag is the most the kernel pushes in one go whatever the burst:
	// a data fragment, a 32 KiB page fragment less its 40-byte header.
	DAPSFrag = 32768 - 40
)

// NewDAPS reads daps's tunables.
func NewDAPS(a Args) DAPS { return DAPS{K: a.get(0, dapsKDef)} }

func (DAPS) Name() string { return "daps" }

func clamp64(v, lo, hi uint64) uint64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// dapsNext is daps_next: the usable subflow of the tier other than f with
// window room and the lowest srtt.
func dapsNext(c *Conn, f int) int {
	t, bestRTT, best := tier(c), ^uint32(0), -1
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		x := &c.Sf[i]
		if i == f || !inTier(x, t) || space(x) == 0 {
			continue
		}
		if x.SrttUs < bestRTT {
			bestRTT, best = x.SrttUs, i
		}
	}
	return best
}

// DAPSLead is daps_lead: the bytes f must hold beyond its window before b
// bytes go on s, with k in 1/1024.
func DAPSLead(f, s *Subflow, b, k uint64) uint64 {
	if f.SrttUs == 0 || s.SrttUs == 0 {
		return 0
	}
	rf := clamp64(uint64(f.SrttUs), 1, dapsRTTCap)
	rs := clamp64(uint64(s.SrttUs), 1, dapsRTTCap)
	cf := clamp64(uint64(f.Cwnd), 1, dapsCwndCap)
	cs := clamp64(uint64(s.Cwnd), 1, dapsCwndCap)
	mss := clamp64(uint64(f.Mss), 1, dapsMSSCap)
	var d uint64
	if rs > rf {
		d = (rs - rf) * k / dapsKOne
	}
	var extra uint64
	if b > uint64(s.Mss) {
		extra = b - uint64(s.Mss)
	}
	return cf*mss*d/rf + extra*cf*rs/(cs*rf)
}

func (m DAPS) Send(c *Conn, _ *State) Out {
	var o Out
	f := lowestRTT(c, false)
	if f < 0 || f >= MaxSubflows {
		return o
	}
	ff := &c.Sf[f]
	n := dapsNext(c, f)
	if n < 0 {
		if space(ff) > 0 {
			choose(c, f, &o)
		}
		return o
	}
	fs := &c.Sf[n]
	k := clamp64(uint64(m.K), 0, dapsKOne)
	var frag uint64 // what the next push moves at least
	if c.WriteSeq > c.SndNxt {
		frag = min(c.WriteSeq-c.SndNxt, DAPSFrag)
	}
	b := clamp64(max(uint64(space(fs)), frag), uint64(fs.Mss), BurstMax)
	lead := clamp64(DAPSLead(ff, fs, b, k), 0, 0xffffffff)
	var room uint64
	if ff.Cwnd > ff.Inflight {
		room = uint64(ff.Cwnd-ff.Inflight) * uint64(ff.Mss)
	}
	q := int64(ff.Notsent) - int64(room)
	g := int64(max(frag, uint64(ff.Mss)))
	if 2*q >= 2*int64(lead)-g {
		return Out{Mask: 1 << n, Burst: uint32(b)}
	}
	return Out{Mask: 1 << f, Burst: uint32(clamp64(uint64(int64(lead)-q), uint64(ff.Mss), 0xffffffff))}
}

func (DAPS) Retrans(c *Conn, _ *State) Out { return retransOnBest(c) }
