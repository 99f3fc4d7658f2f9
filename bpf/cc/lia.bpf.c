// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * LIA, the Linked Increases Algorithm of RFC 6356.
 *
 * Per ACK on subflow i:  w_i += min(alpha / w_total, 1 / w_i)
 *   alpha = w_total * max_k(w_k / rtt_k^2) / (sum_k w_k / rtt_k)^2
 * so alpha / w_total = max_k s_k^2 / w_k with s_k the rate share (cc_fixed.h).
 * On loss: halve, as Reno.
 *
 * Coupled quantity exported: alpha (Q32).
 */
/* LIA reads only the siblings' windows and RTTs. (cc_conn.h) */
#define MPCC_SIBLING_READS 0
#include "cc_skel.h"

__noinline int algo_increase(const struct mpcc_conn *c, struct mpcc_out *o)
{
	__u32 s[MPCC_MAX_PATHS] = {}, wsum = 0, i;
	struct mpcc_frac f;
	__s64 inc;

	if (!c || !o)
		return 0;
	mpcc_shares(c, s);
	f = mpcc_lia_frac(c, s);
	for (i = 0; i < MPCC_MAX_PATHS; i++) {
		if (i >= c->n)
			break;
		wsum += c->p[i].cwnd;
	}
	inc = (__s64)(f.num / f.den);
	o->coupled = inc * wsum; /* alpha */
	/* min(inc, 1/w) */
	o->inc = mpcc_frac_le_one_over_w(f, c->p[0].cwnd) ? inc : one_over_w(c->p[0].cwnd);
	return 0;
}

MPCC_RENO_SSTHRESH()

MPCC_STRUCT_OPS(lia, "mptcp_lia");
