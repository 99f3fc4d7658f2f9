// SPDX-License-Identifier: Apache-2.0

package schedmodel

// The question of bpf/include/sched_fastslow.h, under the same names.

// chooseSegment is sched_choose_segment: send on Sf[i] for one segment.
func chooseSegment(c *Conn, i int, o *Out) {
	if i < 0 || i >= MaxSubflows {
		return
	}
	o.Mask |= 1 << i
	o.Burst = c.Sf[i].Mss
	if o.Burst == 0 {
		o.Burst = 1
	}
}

// fastest is sched_fastest: the established subflow of the current tier
// with the lowest RTT, its send buffer full or not.
func fastest(c *Conn) int { return lowestRTTWhere(c, pickAnyBuf) }

// fastSlow is sched_fast_slow: decided (o filled in or left empty) when the
// fastest subflow is usable with room, no usable subflow has room, or the
// one with room is not slower; otherwise the fastest (f) and the fastest
// with room (s) for the caller to weigh.
func fastSlow(c *Conn, o *Out) (decided bool, f, s int) {
	fast := fastest(c)
	if fast < 0 {
		return true, -1, -1
	}
	if usable(&c.Sf[fast]) && space(&c.Sf[fast]) != 0 {
		choose(c, fast, o)
		return true, -1, -1
	}
	slow := lowestRTT(c, true)
	if slow < 0 {
		return true, -1, -1
	}
	if c.Sf[slow].SrttUs <= c.Sf[fast].SrttUs {
		choose(c, slow, o)
		return true, -1, -1
	}
	return false, fast, slow
}
