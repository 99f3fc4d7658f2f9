// SPDX-License-Identifier: Apache-2.0

package schedmodel

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(algo.Info{ID: 5, Summary: "minrtt that waits for the fast subflow when that finishes earlier (ECF)"}, func(Args) Scheduler { return ECF{} })
}

// ECF mirrors bpf/sched/ecf.bpf.c (Lim et al., CoNEXT 2017, Algorithm 1);
// State.W[0] is `waiting`.
type ECF struct{}

// The caps and beta of ecf.bpf.c.
const (
	ecfBetaDen    = 4 // beta = 1/4
	ecfFieldMax   = 65535
	ecfWaitingMax = 1 << 32
	ecfTimeMax    = 1 << 24
)

func (ECF) Name() string { return "ecf" }

func ecfCap(v, hi, lo uint64) uint64 { return max(min(v, hi), lo) }

func (ECF) Send(c *Conn, st *State) Out {
	var o Out
	decided, f, s := fastSlow(c, &o)
	if decided {
		return o
	}
	xf, xs := &c.Sf[f], &c.Sf[s]
	var k uint64
	if c.WriteSeq > c.SndNxt {
		k = c.WriteSeq - c.SndNxt
	}
	k = ecfCap(k, ecfWaitingMax, 0)
	mss := ecfCap(uint64(xf.Mss), ecfFieldMax, 1)
	cwndF := ecfCap(uint64(xf.Cwnd), ecfFieldMax, 1)
	cwndS := ecfCap(uint64(xs.Cwnd), ecfFieldMax, 1)
	rttF := ecfCap(uint64(xf.SrttUs), ecfTimeMax, 0)
	rttS := ecfCap(uint64(xs.SrttUs), ecfTimeMax, 0)
	delta := ecfCap(uint64(max(xf.RttvarUs, xs.RttvarUs)), ecfTimeMax, 0)
	var waiting uint64
	if st.W[0] != 0 {
		waiting = 1
	}
	unit := mss * cwndF
	if (unit+k)*rttF*ecfBetaDen < (ecfBetaDen+waiting)*(rttS+delta)*unit {
		if k*rttS >= (2*rttF+delta)*mss*cwndS {
			st.W[0] = 1
			return o
		}
	} else {
		st.W[0] = 0
	}
	chooseSegment(c, s, &o)
	return o
}

func (ECF) Retrans(c *Conn, _ *State) Out { return retransOnBest(c) }
