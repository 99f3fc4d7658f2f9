// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * rr: strict round-robin, as multipath-tcp.org's "roundrobin" scheduler
 * (Paasch et al., "Experimental evaluation of multipath TCP schedulers",
 * CSWS 2014) and the export branch's bpf_rr: each decision goes to the next
 * usable subflow after the one used last, whether its congestion window has
 * room or not; backups only when no other subflow is usable.
 *
 * Order: by the kernel's subflow id, which is stable for the connection's
 * life (the list position of a subflow is not: a closed one shifts the
 * rest). The next subflow is the usable one with the smallest id above the
 * last one used, wrapping to the smallest id.
 *
 * State: w[0] = id of the subflow used last (0: none yet; the kernel
 * numbers subflows from 1).
 *
 * Tunable: arg0 = packets per turn (default 1, multipath-tcp.org's
 * num_segments). The burst is arg0 times the chosen subflow's MSS, capped
 * by the kernel's 64 KiB push limit.
 *
 * Departures from multipath-tcp.org's roundrobin:
 *  - no cwnd_limited mode: it never skips a subflow for a full window (the
 *    data waits in that subflow's queue; a full send buffer does make it
 *    unusable, as everywhere);
 *  - the kernel moves whole data fragments: a turn carries at least the
 *    rest of the fragment at the send head (up to a 32 KiB page fragment),
 *    so one packet per turn means one fragment per turn;
 *  - reinjections go to the lowest-RTT idle usable subflow, as the
 *    kernel default does (SCHED_RETRANS_ON_BEST),
 *    not to the next in turn: without get_retrans the kernel asks get_send,
 *    and the rotation then spread reinjected data over every subflow.
 */
#include "sched_skel.h"
#include "sched_pick.h"

#define RR_PACKETS_DEFAULT 1

__noinline int algo_send(const struct mpsch_conn *c, struct mpsch_state *s, struct mpsch_out *o)
{
	__u32 tier, last, next_id = 0, first_id = 0;
	int next = -1, first = -1;
	__u64 burst;

	if (!c || !s || !o)
		return 0;
	tier = sched_tier(c);
	last = (__u32)s->w[0];
	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		const struct mpsch_sf *f;

		if (i >= c->n)
			break;
		f = &c->sf[i];
		if (!sf_in_tier(f, tier))
			continue;
		if (first < 0 || f->id < first_id) {
			first = i;
			first_id = f->id;
		}
		if (f->id > last && (next < 0 || f->id < next_id)) {
			next = i;
			next_id = f->id;
		}
	}
	if (next < 0) {
		next = first;
		next_id = first_id;
	}
	if (next < 0 || next >= SCHED_MAX_SUBFLOWS)
		return 0;
	burst = (__u64)sched_arg(sched_params(), 0, RR_PACKETS_DEFAULT) * c->sf[next].mss;
	if (burst > SCHED_BURST_MAX)
		burst = SCHED_BURST_MAX;
	o->mask = 1u << next;
	o->burst = burst ? (__u32)burst : 1;
	s->w[0] = next_id;
	return 0;
}

SCHED_RETRANS_ON_BEST()

SCHED_STRUCT_OPS(rr, "mpcc_rr");
