// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * RSF-MPTCP, the rent-seeking framework (Pokhrel and Williamson, seed 002),
 * delay-based variant RSF-DB.
 *
 * The paper's increase per ACK on path i is
 *     f_i / w_i,   f_i = min(1, (d - q_i) / q_i)
 * with q_i the path's queueing delay (srtt - min rtt) and d a target delay;
 * halve on loss. Left alone that is uncoupled Reno wherever queues are short.
 * We keep it as the paper's "rent" a path earns while its queue stays under
 * the target, and couple through LIA as a floor:
 *     w_i += max(f_i / w_i, LIA's coupled increase),  f_i clamped to [0, 1]
 * so a subflow whose queue passed d (a contended bottleneck) takes no more
 * than LIA would, which keeps RSF fair to single-path TCP there, while paths
 * with short queues and random loss grow as the paper's RSF does. See
 * docs/algorithms.md for why, and for the loss-based variant.
 *
 * Coupled quantity exported: f_i (Q32).
 */
/* RSF reads only the siblings' windows and RTTs (its own queue delay is p[0]'s). (cc_conn.h) */
#define MPCC_SIBLING_READS 0
#include "cc_skel.h"

/* f = min(1, (d - q) / q) clamped at 0, Q16 */
static __always_inline __u32 rsf_factor(const struct mpcc_path *p, __u32 d)
{
	__u32 q = 0;

	if (p->min_rtt_us && p->srtt_us > p->min_rtt_us)
		q = p->srtt_us - p->min_rtt_us;
	if ((__u64)q * 2 <= d)
		return MPCC_SHARE_ONE;
	if (q >= d)
		return 0;
	return (__u32)(((__u64)(d - q) << MPCC_SHARE_SHIFT) / q);
}

__noinline int algo_increase(const struct mpcc_conn *c, struct mpcc_out *o)
{
	__u32 s[MPCC_MAX_PATHS] = {}, f;
	__s64 lia, own;

	if (!c || !o)
		return 0;
	mpcc_shares(c, s);
	lia = mpcc_lia_term(c, s);
	f = rsf_factor(&c->p[0], c->target_us);
	own = (__s64)(((__u64)f * (__u64)one_over_w(c->p[0].cwnd)) >> MPCC_SHARE_SHIFT);
	o->inc = own > lia ? own : lia;
	o->coupled = (__s64)f << (32 - MPCC_SHARE_SHIFT);
	return 0;
}

MPCC_RENO_SSTHRESH()

MPCC_STRUCT_OPS(rsf, "mptcp_rsf");
