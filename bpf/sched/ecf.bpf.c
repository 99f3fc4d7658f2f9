// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ecf: Earliest Completion First (Lim, Nahum, Towsley, Gao et al., "ECF:
 * An MPTCP path scheduler to manage heterogeneous paths", CoNEXT 2017,
 * Algorithm 1). minrtt, except that when the fastest established subflow
 * x_f is out of window room (or send buffer), the fastest one with room,
 * x_s, is used only if that is predicted to finish the waiting data no
 * later than waiting for x_f.
 *
 * With k the data waiting to be sent (write_seq - snd_nxt of the
 * connection) in packets of MSS_f, n = 1 + k / CWND_f,
 * delta = max(RTTVAR_f, RTTVAR_s) and beta = 1/4:
 *
 *   if n * RTT_f < (1 + waiting * beta) * (RTT_s + delta):
 *       if k / CWND_s * RTT_s >= 2 * RTT_f + delta:
 *           waiting = 1; send nothing (wait for x_f)
 *       else:
 *           send on x_s
 *   else:
 *       waiting = 0; send on x_s
 *
 * Integer math: both sides of each inequality are multiplied out by the
 * denominators (MSS_f * CWND_f and 4; MSS_f * CWND_s), so k and n are exact
 * fractions, never truncated. Caps that keep every product below 2^61:
 * MSS and CWND at 65535, k at 2^32 bytes, RTTs and RTTVARs at 2^24 us.
 * RTTVAR is the snapshot's rttvar_us (the kernel's mean deviation, mdev).
 *
 * State: w[0] = waiting (0 or 1), the hysteresis of the first test.
 * No tunables (beta is the paper's 1/4).
 *
 * Departures from the paper:
 *  - when x_f has room the decision is minrtt's, with minrtt's burst (the
 *    room); on x_s the burst is one segment, as the algorithm decides per
 *    segment (the kernel still pushes at least the rest of the data
 *    fragment at the send head, up to 32 KiB);
 *  - a subflow with room and an RTT no longer than x_f's is used without
 *    the test;
 *  - x_f may have a full send buffer rather than a full window (both mean
 *    it takes nothing now; minrtt would then not see it at all);
 *  - reinjections go to the lowest-RTT idle usable subflow, as the
 *    kernel default does (SCHED_RETRANS_ON_BEST).
 */
#include "sched_skel.h"
#include "sched_fastslow.h"

#define ECF_BETA_DEN 4            /* beta = 1/4 */
#define ECF_FIELD_MAX 65535       /* cap on MSS and CWND */
#define ECF_WAITING_MAX (1ull << 32)
#define ECF_TIME_MAX (1ull << 24) /* us */

static __always_inline __u64 ecf_cap(__u64 v, __u64 max, __u64 min)
{
	return v > max ? max : v < min ? min : v;
}

__noinline int algo_send(const struct mpsch_conn *c, struct mpsch_state *s, struct mpsch_out *o)
{
	const struct mpsch_sf *xf, *xs;
	__u64 k, mss, cwnd_f, cwnd_s, rtt_f, rtt_s, delta, unit, waiting;
	int f = -1, sl = -1;

	if (!c || !s || !o)
		return 0;
	if (sched_fast_slow(c, o, &f, &sl))
		return 0;
	if (f < 0 || f >= SCHED_MAX_SUBFLOWS || sl < 0 || sl >= SCHED_MAX_SUBFLOWS)
		return 0;
	xf = &c->sf[f];
	xs = &c->sf[sl];
	k = ecf_cap(c->write_seq > c->snd_nxt ? c->write_seq - c->snd_nxt : 0, ECF_WAITING_MAX, 0);
	mss = ecf_cap(xf->mss, ECF_FIELD_MAX, 1);
	cwnd_f = ecf_cap(xf->cwnd, ECF_FIELD_MAX, 1);
	cwnd_s = ecf_cap(xs->cwnd, ECF_FIELD_MAX, 1);
	rtt_f = ecf_cap(xf->srtt_us, ECF_TIME_MAX, 0);
	rtt_s = ecf_cap(xs->srtt_us, ECF_TIME_MAX, 0);
	delta = ecf_cap(xf->rttvar_us > xs->rttvar_us ? xf->rttvar_us : xs->rttvar_us, ECF_TIME_MAX, 0);
	waiting = s->w[0] ? 1 : 0;
	unit = mss * cwnd_f; /* bytes of one x_f window */

	/* n * RTT_f < (1 + waiting * beta) * (RTT_s + delta), times 4 * unit */
	if ((unit + k) * rtt_f * ECF_BETA_DEN < (ECF_BETA_DEN + waiting) * (rtt_s + delta) * unit) {
		/* k / CWND_s * RTT_s >= 2 * RTT_f + delta, times MSS_f * CWND_s */
		if (k * rtt_s >= (2 * rtt_f + delta) * mss * cwnd_s) {
			s->w[0] = 1;
			return 0;
		}
	} else {
		s->w[0] = 0;
	}
	sched_choose_segment(c, sl, o);
	return 0;
}

SCHED_RETRANS_ON_BEST()

SCHED_STRUCT_OPS(ecf, "mpcc_ecf");
