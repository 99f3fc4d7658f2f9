/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sched_pick.h: the questions every scheduler asks of the snapshot - may a
 * subflow take data, how much its window still has room for, which usable
 * subflow has the lowest RTT - answered once. pkg/model/sched.go has the
 * same functions under the same names; keep them in step.
 */
#pragma once

#include "sched_types.h"

/* Established and its send buffer takes more. */
static __always_inline bool sf_usable(const struct mpsch_sf *f)
{
	return (f->flags & (SCHED_SF_ACTIVE | SCHED_SF_MEMFREE)) == (SCHED_SF_ACTIVE | SCHED_SF_MEMFREE);
}

/* Bytes its congestion window has room for beyond what is in flight and
 * what is already queued on it. */
static __always_inline __u32 sf_space(const struct mpsch_sf *f)
{
	__u64 w = f->cwnd > f->inflight ? (__u64)(f->cwnd - f->inflight) * f->mss : 0;

	return w > f->notsent ? (__u32)(w - f->notsent) : 0;
}

/* Backup subflows take data only when no other is usable (RFC 8684 3.3.8):
 * the SCHED_SF_BACKUP value a subflow must have to be considered now. */
static __always_inline __u32 sched_tier(const struct mpsch_conn *c)
{
	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		if (i >= c->n)
			break;
		if (sf_usable(&c->sf[i]) && !(c->sf[i].flags & SCHED_SF_BACKUP))
			return 0;
	}
	return SCHED_SF_BACKUP;
}

static __always_inline bool sf_in_tier(const struct mpsch_sf *f, __u32 tier)
{
	return sf_usable(f) && (f->flags & SCHED_SF_BACKUP) == tier;
}

/* Nothing in flight and nothing queued on it. */
static __always_inline bool sf_idle(const struct mpsch_sf *f)
{
	return !f->inflight && !f->notsent;
}

/* What sched_lowest_rtt_where asks of a subflow besides being in the
 * current tier. */
#define SCHED_PICK_SPACE 1   /* window room (sf_space) */
#define SCHED_PICK_IDLE 2    /* nothing in flight or queued (sf_idle) */
#define SCHED_PICK_ANY_BUF 4 /* established is enough: its send buffer may be full */

/* The subflow of the current tier with the lowest smoothed RTT among those
 * that are usable (or only established, with SCHED_PICK_ANY_BUF) and meet
 * `need` (SCHED_PICK_*); -1 when there is none. Ties go to the first in the
 * kernel's list. */
static __always_inline int sched_lowest_rtt_where(const struct mpsch_conn *c, __u32 need)
{
	__u32 tier = sched_tier(c), best_rtt = ~0u;
	__u32 must = need & SCHED_PICK_ANY_BUF ? SCHED_SF_ACTIVE : SCHED_SF_ACTIVE | SCHED_SF_MEMFREE;
	int best = -1;

	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		const struct mpsch_sf *f;

		if (i >= c->n)
			break;
		f = &c->sf[i];
		if ((f->flags & must) != must || (f->flags & SCHED_SF_BACKUP) != tier)
			continue;
		if ((need & SCHED_PICK_SPACE && !sf_space(f)) || (need & SCHED_PICK_IDLE && !sf_idle(f)))
			continue;
		if (f->srtt_us < best_rtt) {
			best_rtt = f->srtt_us;
			best = i;
		}
	}
	return best;
}

static __always_inline int sched_lowest_rtt(const struct mpsch_conn *c, bool need_space)
{
	return sched_lowest_rtt_where(c, need_space ? SCHED_PICK_SPACE : 0);
}

/* Send on sf[i] for as many bytes as its window has room for (at least
 * one packet, so a decision always moves data). */
static __always_inline void sched_choose(const struct mpsch_conn *c, int i, struct mpsch_out *o)
{
	__u32 space;

	if (i < 0 || i >= SCHED_MAX_SUBFLOWS)
		return;
	space = sf_space(&c->sf[i]);
	o->mask |= 1u << i;
	o->burst = space > c->sf[i].mss ? space : c->sf[i].mss;
}

/* algo_retrans for a scheduler that reinjects on the lowest-RTT usable
 * subflow that is idle, window or not, and nowhere when none is (the
 * kernel re-arms its retransmission timer and asks again). Behind queued
 * data a reinjection lands no earlier than the original; the kernel's
 * default scheduler skips such subflows too. Putting it on the lowest-RTT
 * subflow regardless made a slow-path loss repaired past the connection's
 * timer into bursts of whole 32 KB fragments reinjected behind queues:
 * 1.16-1.5x the payload on the wire in TestGuestMinRTT whenever it was not
 * the first test in the VM (docs/schedulers.md, daps and papd). */
#define SCHED_RETRANS_ON_BEST()                                                                    \
	__noinline int algo_retrans(const struct mpsch_conn *c, struct mpsch_state *s,             \
				    struct mpsch_out *o)                                           \
	{                                                                                          \
		if (!c || !s || !o)                                                                \
			return 0;                                                                  \
		sched_choose(c, sched_lowest_rtt_where(c, SCHED_PICK_IDLE), o);                        \
		return 0;                                                                          \
	}
