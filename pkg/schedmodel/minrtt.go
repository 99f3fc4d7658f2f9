// SPDX-License-Identifier: Apache-2.0

package schedmodel

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(algo.Info{ID: 1, Summary: "lowest RTT with window space (the classic default)"}, func(Args) Scheduler { return MinRTT{} })
}

// MinRTT mirrors bpf/sched/minrtt.bpf.c.
type MinRTT struct{}

func (MinRTT) Name() string { return "minrtt" }

func (MinRTT) Send(c *Conn, _ *State) Out {
	var o Out
	choose(c, lowestRTT(c, true), &o)
	return o
}

func (MinRTT) Retrans(c *Conn, _ *State) Out { return retransOnBest(c) }
