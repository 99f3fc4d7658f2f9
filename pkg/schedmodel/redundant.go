// SPDX-License-Identifier: Apache-2.0

package schedmodel

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(algo.Info{ID: 3, Summary: "every usable subflow: new data spread, reinjections duplicated"}, func(Args) Scheduler { return Redundant{} })
}

// Redundant mirrors bpf/sched/redundant.bpf.c: every usable subflow of the
// current tier, for new data and for reinjections.
type Redundant struct{}

func (Redundant) Name() string { return "redundant" }

func (Redundant) Send(c *Conn, _ *State) Out { return redAll(c) }

func (Redundant) Retrans(c *Conn, _ *State) Out { return redAll(c) }

func redAll(c *Conn) Out {
	var o Out
	t, mss := tier(c), ^uint32(0)
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		if !inTier(&c.Sf[i], t) {
			continue
		}
		o.Mask |= 1 << i
		mss = min(mss, c.Sf[i].Mss)
	}
	if o.Mask != 0 {
		o.Burst = max(mss, 1)
	}
	return o
}
