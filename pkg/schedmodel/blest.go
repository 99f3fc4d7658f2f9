// SPDX-License-Identifier: Apache-2.0

package schedmodel

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(algo.Info{ID: 4, Summary: "minrtt that skips a slow subflow predicted to block the fast one (BLEST)"}, func(a Args) Scheduler { return BLEST{Lambda: a.get(0, 120)} })
}

// BLEST mirrors bpf/sched/blest.bpf.c (Ferlin et al., IFIP Networking
// 2016). Lambda is in hundredths.
type BLEST struct{ Lambda uint32 }

// The fixed point of blest.bpf.c.
const (
	blestQ         = 10 // the RTT ratio r in Q10
	blestRatioMax  = 64 << blestQ
	blestFieldMax  = 65535 // cap on CWND_f and the MSSes
	blestWindowMax = 1 << 40
	blestLambdaMax = 65535
)

func (BLEST) Name() string { return "blest" }

func (b BLEST) Send(c *Conn, _ *State) Out {
	var o Out
	decided, f, s := fastSlow(c, &o)
	if decided {
		return o
	}
	if blestBlocks(c, &c.Sf[f], &c.Sf[s], min(uint64(b.Lambda), blestLambdaMax)) {
		return o
	}
	chooseSegment(c, s, &o)
	return o
}

func (BLEST) Retrans(c *Conn, _ *State) Out { return retransOnBest(c) }

// blestFastBytes is X = MSS_f * (CWND_f + (r-1)/2) * r, r = RTT_s/RTT_f,
// in the fixed point of blest_fast_bytes.
func blestFastBytes(f, s *Subflow) uint64 {
	rttF := max(uint64(f.SrttUs), 1)
	r := min(uint64(s.SrttUs)<<blestQ/rttF, blestRatioMax)
	var half uint64
	if r > 1<<blestQ {
		half = (r - 1<<blestQ) / 2
	}
	pkts := min(uint64(f.Cwnd), blestFieldMax)<<blestQ + half
	return min(uint64(f.Mss), blestFieldMax) * (pkts * r >> blestQ) >> blestQ
}

// blestBlocks: X * lambda > SW - (MSS_s * (inflight_s + 1) + queued_s).
func blestBlocks(c *Conn, f, s *Subflow, lambda uint64) bool {
	var sw, room uint64
	if c.WndEnd > c.SndUna {
		sw = c.WndEnd - c.SndUna
	}
	held := (uint64(s.Inflight)+1)*min(uint64(s.Mss), blestFieldMax) + uint64(s.Notsent)
	if sw > held {
		room = min(sw-held, blestWindowMax)
	}
	return blestFastBytes(f, s)*lambda > room*100
}
