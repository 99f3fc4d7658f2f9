// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * wVegas, weighted Vegas for MPTCP (Cao, Xu, Fu, ICNP 2012).
 *
 * Each subflow runs Vegas: it estimates the packets it keeps queued,
 *     diff_i = w_i * (rtt_i - base_i) / rtt_i
 * and steers diff_i to a target alpha_i, one packet per round up or down.
 * The connection's total target (WVEGAS_TOTAL_ALPHA packets) is split by
 * rate share, alpha_i = max(2, s_i * WVEGAS_TOTAL_ALPHA), so the subflows
 * together keep a bounded backlog and a path whose queue grows loses
 * window to the others. A queue at least as long as the base RTT (rtt_i
 * >= 2 base_i) is drained fast: over a round, the cut to the out-of-tree
 * kernel's w_i * base_i / (2 rtt_i). Loss halves the window, as Reno.
 *
 * With one path (a plain TCP socket, or a subflow alone) it is Reno, as
 * every CC here. Everything is decided per ACK from the snapshot, so
 * pkg/model replays it: rtt_i is the subflow's srtt, base_i its min RTT
 * (the kernel's windowed minimum), and a per-round change of one packet
 * is 1/w_i per ACKed packet. docs/algorithms.md says where this differs
 * from the out-of-tree kernel and why.
 *
 * Coupled quantity exported: alpha_i, packets (Q32; 0 with one path).
 */
/* wVegas reads only the siblings' windows and RTTs (its weight is the rate
 * share; its own base RTT is p[0]'s). (cc_conn.h) */
#define MPCC_SIBLING_READS 0
#include "cc_skel.h"

#define WVEGAS_TOTAL_ALPHA 10 /* packets queued by the whole connection */
/* Every subflow's floor, packets. A decrease needs diff > alpha, and
 * diff < w, so no window of 3 packets or less shrinks by its own decision
 * (the out-of-tree kernel's floor of 2, kept without a test of its own). */
#define WVEGAS_MIN_ALPHA 2

/* alpha_i = max(2, s_i * total), whole packets (s_i Q16). */
static __always_inline __u32 wvegas_alpha(__u32 share)
{
	__u32 a = (__u32)(((__u64)share * WVEGAS_TOTAL_ALPHA) >> MPCC_SHARE_SHIFT);

	return a > WVEGAS_MIN_ALPHA ? a : WVEGAS_MIN_ALPHA;
}

/* diff = w * (rtt - base) / rtt, whole packets; 0 without a base RTT or
 * when srtt is not above it. */
static __always_inline __u64 wvegas_diff(const struct mpcc_path *p)
{
	if (!p->min_rtt_us || p->srtt_us <= p->min_rtt_us)
		return 0;
	return (__u64)p->cwnd * (p->srtt_us - p->min_rtt_us) / p->srtt_us;
}

__noinline int algo_increase(const struct mpcc_conn *c, struct mpcc_out *o)
{
	__u32 s[MPCC_MAX_PATHS] = {}, alpha, base, rtt;
	__u64 diff;

	if (!c || !o)
		return 0;
	/* One path (a plain TCP socket, or a subflow alone): Reno, as every
	 * CC here (cc_conn.h), and no target in force. */
	if (c->n == 1) {
		o->inc = one_over_w(c->p[0].cwnd);
		o->coupled = 0;
		return 0;
	}
	mpcc_shares(c, s);
	alpha = wvegas_alpha(s[0]);
	diff = wvegas_diff(&c->p[0]);
	base = c->p[0].min_rtt_us;
	rtt = c->p[0].srtt_us;
	o->coupled = (__s64)alpha << 32;
	if (diff < alpha) {
		o->inc = one_over_w(c->p[0].cwnd);
	} else if (diff == alpha) {
		o->inc = 0;
	} else if ((__u64)rtt >= 2 * (__u64)base) {
		/* Drain: the cut to w * base / (2 rtt) spread over the round's
		 * w ACKs is 1 - base / (2 rtt) packets per ACK. */
		o->inc = -(MPCC_ONE - (__s64)(((__u64)base << 31) / rtt));
	} else {
		o->inc = -one_over_w(c->p[0].cwnd);
	}
	return 0;
}

MPCC_RENO_SSTHRESH()

MPCC_STRUCT_OPS(wvegas, "mptcp_wvegas");
