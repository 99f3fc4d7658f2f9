// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * blest: BLocking ESTimation (Ferlin, Alay, Mehani, Boreli, "BLEST:
 * Blocking estimation-based MPTCP scheduler for heterogeneous networks",
 * IFIP Networking 2016). minrtt, except that a slower subflow is skipped
 * when the data it would hold is predicted to block the fastest one in the
 * connection's receive window.
 *
 * With x_f the fastest established subflow, out of window room or send
 * buffer, and x_s the fastest one with room (slower than x_f), and
 * r = RTT_s / RTT_f:
 *
 *   X = MSS_f * (CWND_f + (r - 1) / 2) * r
 *
 * bytes x_f can send during one RTT of x_s (its window grows by one packet
 * per RTT of its own). x_s is skipped - nothing is sent, the kernel asks
 * again on the next ACK - when
 *
 *   X * lambda > SW - (MSS_s * (inflight_s + 1) + queued_s)
 *
 * where SW = wnd_end - snd_una is the receive window the peer grants the
 * connection, the paper's |SW| (multipath-tcp.org's mptcp_blest uses the
 * meta socket's snd_wnd, the same quantity). Not wnd_end - snd_nxt: x_f's
 * own data in flight is acknowledged within one of its RTTs and frees its
 * part of the window again, while what x_s holds stays for RTT_s.
 *
 * Fixed point: r is kept in Q10 (r * 1024) and capped at 64 (beyond that
 * X exceeds any window anyway); CWND_f and the MSSes are capped at 65535 so
 * that X * lambda stays below 2^55.
 *
 * Tunable: arg0 = lambda in hundredths (default 120 = 1.2, the initial
 * value of multipath-tcp.org's implementation), at most 65535.
 *
 * Departures from the paper:
 *  - lambda is fixed (a tunable), not adapted by the observed spurious
 *    retransmissions;
 *  - queued_s (bytes on x_s's queue, not yet sent) counts with its data in
 *    flight: on this kernel data handed to a subflow waits in its queue;
 *  - when x_f has room the decision is minrtt's, with minrtt's burst (the
 *    room); on x_s the burst is one segment, since the check is for one
 *    segment (the kernel still pushes at least the rest of the data
 *    fragment at the send head, up to 32 KiB);
 *  - a subflow with room and an RTT no longer than x_f's is used without
 *    the check (nothing there to block);
 *  - x_f may have a full send buffer rather than a full window (both mean
 *    it takes nothing now; minrtt would then not see it at all);
 *  - reinjections go to the lowest-RTT idle usable subflow, as the
 *    kernel default does (SCHED_RETRANS_ON_BEST).
 */
#include "sched_skel.h"
#include "sched_fastslow.h"

#define BLEST_LAMBDA_DEFAULT 120  /* hundredths */
#define BLEST_LAMBDA_MAX 65535
#define BLEST_Q 10                /* r in Q10 */
#define BLEST_RATIO_MAX (64 << BLEST_Q)
#define BLEST_FIELD_MAX 65535     /* cap on CWND_f and the MSSes */
#define BLEST_WINDOW_MAX (1ull << 40)

static __always_inline __u64 blest_min(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

/* X, bytes x_f may send during one RTT of x_s. */
static __always_inline __u64 blest_fast_bytes(const struct mpsch_sf *f, const struct mpsch_sf *s)
{
	__u64 rtt_f = f->srtt_us ? f->srtt_us : 1;
	__u64 r = blest_min(((__u64)s->srtt_us << BLEST_Q) / rtt_f, BLEST_RATIO_MAX);
	__u64 half = r > (1 << BLEST_Q) ? (r - (1 << BLEST_Q)) / 2 : 0;
	__u64 pkts = (blest_min(f->cwnd, BLEST_FIELD_MAX) << BLEST_Q) + half; /* Q10 */

	return (blest_min(f->mss, BLEST_FIELD_MAX) * ((pkts * r) >> BLEST_Q)) >> BLEST_Q;
}

/* Whether sending one more segment on x_s is predicted to block x_f. */
static __always_inline bool blest_blocks(const struct mpsch_conn *c, const struct mpsch_sf *f,
					 const struct mpsch_sf *s, __u64 lambda)
{
	__u64 sw = c->wnd_end > c->snd_una ? c->wnd_end - c->snd_una : 0;
	__u64 held = ((__u64)s->inflight + 1) * blest_min(s->mss, BLEST_FIELD_MAX) + s->notsent;
	__u64 room = sw > held ? blest_min(sw - held, BLEST_WINDOW_MAX) : 0;

	return blest_fast_bytes(f, s) * lambda > room * 100;
}

__noinline int algo_send(const struct mpsch_conn *c, struct mpsch_state *s, struct mpsch_out *o)
{
	__u64 lambda;
	int f = -1, sl = -1;

	if (!c || !s || !o)
		return 0;
	if (sched_fast_slow(c, o, &f, &sl))
		return 0;
	if (f < 0 || f >= SCHED_MAX_SUBFLOWS || sl < 0 || sl >= SCHED_MAX_SUBFLOWS)
		return 0;
	lambda = blest_min(sched_arg(sched_params(), 0, BLEST_LAMBDA_DEFAULT), BLEST_LAMBDA_MAX);
	if (blest_blocks(c, &c->sf[f], &c->sf[sl], lambda))
		return 0;
	sched_choose_segment(c, sl, o);
	return 0;
}

SCHED_RETRANS_ON_BEST()

SCHED_STRUCT_OPS(blest, "mpcc_blest");
