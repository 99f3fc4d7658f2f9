// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * minrtt: the classic default of MPTCP schedulers (multipath-tcp.org's
 * "default", Paasch et al. 2014): new data goes to the usable subflow with
 * the lowest smoothed RTT that has room in its congestion window; backups
 * only when no other subflow is usable.
 *
 * Departures from the multipath-tcp.org scheduler:
 *  - when every window is full it schedules nothing and the kernel asks
 *    again on the next ACK, instead of queueing on the subflow anyway;
 *  - the burst it grants is the chosen window's free room (at least one
 *    packet), capped by the kernel's 64 KiB push limit;
 *  - reinjections go to the lowest-RTT idle usable subflow, as the kernel
 *    default does (SCHED_RETRANS_ON_BEST).
 */
#include "sched_skel.h"
#include "sched_pick.h"

__noinline int algo_send(const struct mpsch_conn *c, struct mpsch_state *s, struct mpsch_out *o)
{
	if (!c || !s || !o)
		return 0;
	sched_choose(c, sched_lowest_rtt(c, true), o);
	return 0;
}

SCHED_RETRANS_ON_BEST()

SCHED_STRUCT_OPS(minrtt, "mpcc_minrtt");
