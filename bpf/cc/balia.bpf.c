// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * BALIA, the Balanced Linked Adaptation algorithm (Peng, Walid, Hwang, Low).
 *
 * x_r = w_r / rtt_r, a_r = max_k x_k / x_r.
 * Per ACK on path r:  w_r += (x_r / rtt_r) / (sum_k x_k)^2 * (1 + a_r)/2 * (4 + a_r)/5
 * On loss:            w_r -= (w_r / 2) * min(a_r, 1.5)
 *
 * With s_r = x_r / sum x and m = max_k x_k / sum x (both shares, cc_fixed.h),
 * (x_r/rtt_r)/(sum x)^2 = s_r^2 / w_r and a_r = m / s_r, so the increase is
 *   (4 s_r^2 + 5 s_r m + m^2) / (10 w_r)
 * in which every term is bounded by 1: no overflow, however small x_r is.
 *
 * Coupled quantity exported: a_r (Q32).
 */
/* BALIA reads only the siblings' windows and RTTs. (cc_conn.h) */
#define MPCC_SIBLING_READS 0
#include "cc_skel.h"

#define BALIA_A_CAP (3U << 15) /* 1.5 in Q16 */

static __always_inline __s64 balia_a(__u32 s0, __u32 smax)
{
	if (!s0)
		return (__s64)BALIA_A_CAP << 16;
	/* The path with the largest rate (every ACK of it): a is exactly 1,
	 * with no division. */
	if (s0 == smax)
		return MPCC_ONE;
	return (__s64)(((__u64)smax << 32) / s0);
}

__noinline int algo_increase(const struct mpcc_conn *c, struct mpcc_out *o)
{
	__u32 s[MPCC_MAX_PATHS] = {}, s0, sm;
	__u64 num;

	if (!c || !o)
		return 0;
	sm = mpcc_shares(c, s);
	s0 = s[0];
	num = 4 * (__u64)s0 * s0 + 5 * (__u64)s0 * sm + (__u64)sm * sm;
	o->inc = (__s64)(num / (10 * (__u64)c->p[0].cwnd));
	o->coupled = balia_a(s0, sm);
	return 0;
}

__noinline int algo_ssthresh(const struct mpcc_conn *c, struct mpcc_out *o)
{
	__u32 s[MPCC_MAX_PATHS] = {}, s0, sm, a16, w;
	__u64 cut;

	if (!c || !o)
		return 0;
	sm = mpcc_shares(c, s);
	s0 = s[0];
	a16 = s0 ? (__u32)(((__u64)sm << 16) / s0) : BALIA_A_CAP;
	if (a16 > BALIA_A_CAP)
		a16 = BALIA_A_CAP;
	w = c->p[0].cwnd;
	cut = ((__u64)w * a16) >> 17; /* (w / 2) * min(a, 1.5) */
	o->ssthresh = w > cut + 2 ? w - (__u32)cut : 2;
	o->coupled = balia_a(s0, sm);
	return 0;
}

MPCC_STRUCT_OPS(balia, "mptcp_balia");
