// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * redundant: every usable subflow, for new data and for reinjections, as
 * multipath-tcp.org's "redundant" scheduler (Frömmgen et al., "ReMP TCP:
 * low latency multipath TCP", ICC 2016) and the export branch's bpf_red.
 * Backups only when no other subflow is usable.
 *
 * What this kernel (7.3 with the export branch's hook) does with the marks,
 * read from net/mptcp/protocol.c and measured in pkg/sched's
 * TestGuestRedundant:
 *
 *  - NEW DATA IS NOT DUPLICATED. __mptcp_push_pending() walks the marked
 *    subflows in list order and each one takes data from the send head
 *    (msk->first_pending), which advances as it is sent: the first takes
 *    `burst` bytes (at least the rest of the head fragment), each other one
 *    the next fragment. Marking every subflow spreads new data over them.
 *  - REINJECTIONS ARE DUPLICATED. __mptcp_retrans() sends the retransmit
 *    head (one data fragment, what was already sent of it) on every marked
 *    subflow; MPTcpExtMPTCPRetrans counts each copy's segments.
 *  - Reinjections happen only when the kernel decides: the MPTCP-level
 *    retransmit timer (no DATA_ACK progress for the subflows' pending RTO)
 *    and a subflow closing with data unacknowledged. A scheduler cannot ask
 *    for one: of the hook's API, only msk->snd_burst and
 *    subflow->avg_pacing_rate are writable, and the mptcp_set_timeout kfunc
 *    recomputes the timer's interval from the subflows' own timers (the push
 *    path already calls it), it neither arms nor fires it. So the full
 *    duplication of ReMP TCP cannot be built on this hook.
 *
 * The closest real thing, what this file does: every usable subflow gets
 * new data at each decision (one fragment each: burst = one packet of the
 * smallest MSS among them), none waits for a window, and every reinjection
 * goes on every usable subflow. No state words; no tunables.
 *
 * Departures from ReMP TCP: new data is spread, not sent on every subflow
 * (the kernel's rule, above); only the retransmit head is duplicated, and
 * only when the kernel reinjects.
 */
#include "sched_skel.h"
#include "sched_pick.h"

static __always_inline void red_all(const struct mpsch_conn *c, struct mpsch_out *o)
{
	__u32 tier = sched_tier(c), mss = ~0u;

	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		if (i >= c->n)
			break;
		if (!sf_in_tier(&c->sf[i], tier))
			continue;
		o->mask |= 1u << i;
		if (c->sf[i].mss < mss)
			mss = c->sf[i].mss;
	}
	if (o->mask)
		o->burst = mss ? mss : 1;
}

__noinline int algo_send(const struct mpsch_conn *c, struct mpsch_state *s, struct mpsch_out *o)
{
	if (!c || !s || !o)
		return 0;
	red_all(c, o);
	return 0;
}

__noinline int algo_retrans(const struct mpsch_conn *c, struct mpsch_state *s, struct mpsch_out *o)
{
	if (!c || !s || !o)
		return 0;
	red_all(c, o);
	return 0;
}

SCHED_STRUCT_OPS(redundant, "mpcc_redundant");
