/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sched_fastslow.h: the question the head-of-line-aware schedulers (BLEST,
 * ECF) share. When the fastest subflow x_f takes nothing now (its window
 * or its send buffer is full) and a slower one x_s has room, is x_s worth
 * using, or is it better to wait for x_f?
 * This header settles every case where there is nothing to weigh and hands
 * the caller the pair when there is. pkg/schedmodel/fastslow.go mirrors it.
 */
#pragma once

#include "sched_pick.h"

/* Send on sf[i] for one segment: the kernel asks again after that. The
 * papers decide segment by segment; the kernel's granularity is coarser
 * (it pushes at least the rest of the data fragment at the send head). */
static __always_inline void sched_choose_segment(const struct mpsch_conn *c, int i, struct mpsch_out *o)
{
	if (i < 0 || i >= SCHED_MAX_SUBFLOWS)
		return;
	o->mask |= 1u << i;
	o->burst = c->sf[i].mss ? c->sf[i].mss : 1;
}

/* x_f: the established subflow of the current tier with the lowest RTT,
 * whether its send buffer takes more now or not. A fast subflow with a full
 * send buffer is as busy as one with a full window: it is the one the
 * papers mean, and a slower one must still be weighed against waiting for
 * it. -1 when none is established. */
static __always_inline int sched_fastest(const struct mpsch_conn *c)
{
	return sched_lowest_rtt_where(c, SCHED_PICK_ANY_BUF);
}

/*
 * Returns true when the decision is made (o filled in, or left empty when
 * no subflow can take data): x_f is usable and has window room, so it is
 * used as by minrtt; or no usable subflow has room; or the one with room
 * (minrtt's choice) is not slower than x_f (nothing to be blocked by).
 * Returns false with *f = x_f and *s = x_s when the caller must weigh
 * sending on the slower x_s against waiting for x_f.
 */
static __always_inline bool sched_fast_slow(const struct mpsch_conn *c, struct mpsch_out *o, int *f, int *s)
{
	int fast = sched_fastest(c), slow;

	if (fast < 0 || fast >= SCHED_MAX_SUBFLOWS)
		return true;
	if (sf_usable(&c->sf[fast]) && sf_space(&c->sf[fast])) {
		sched_choose(c, fast, o);
		return true;
	}
	slow = sched_lowest_rtt(c, true);
	if (slow < 0 || slow >= SCHED_MAX_SUBFLOWS)
		return true;
	if (c->sf[slow].srtt_us <= c->sf[fast].srtt_us) {
		sched_choose(c, slow, o);
		return true;
	}
	*f = fast;
	*s = slow;
	return false;
}
