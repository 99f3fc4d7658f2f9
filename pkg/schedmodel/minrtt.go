// SPDX-License-Identifier: Apache-2.0

package schedmodel

// MinRTT mirrors bpf/sched/minrtt.bpf.c.
type MinRTT struct{}

func (MinRTT) Name() string { return "minrtt" }

func (MinRTT) Send(c *Conn, _ *State) Out {
	var o Out
	choose(c, lowestRTT(c, true), &o)
	return o
}

func (MinRTT) Retrans(c *Conn, _ *State) Out { return retransOnBest(c) }
