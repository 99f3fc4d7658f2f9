// SPDX-License-Identifier: GPL-2.0
/*
 * LIA, the Linked Increases Algorithm of RFC 6356.
 *
 * Per ACK on subflow i:  w_i += min(alpha / w_total, 1 / w_i)
 *   alpha = w_total * max_k(w_k / rtt_k^2) / (sum_k w_k / rtt_k)^2
 * so alpha / w_total = max_k s_k^2 / w_k with s_k the rate share (coupled.h).
 * On loss: halve, as Reno.
 *
 * Coupled quantity exported: alpha (Q32).
 */
#define MPCC_ALGO MPCC_LIA
#include "coupled.h"

__noinline int algo_increase(const struct mpcc_conn *c, struct mpcc_out *o)
{
	__u32 s[MPCC_MAX_PATHS] = {}, wsum = 0, i;
	__s64 inc, cap;

	if (!c || !o)
		return 0;
	mpcc_shares(c, s);
	inc = mpcc_lia_term(c, s);
	for (i = 0; i < MPCC_MAX_PATHS; i++) {
		if (i >= c->n)
			break;
		wsum += c->p[i].cwnd;
	}
	o->coupled = inc * wsum; /* alpha */
	cap = one_over_w(c->p[0].cwnd);
	o->inc = inc < cap ? inc : cap;
	return 0;
}

__noinline int algo_ssthresh(const struct mpcc_conn *c, struct mpcc_out *o)
{
	if (!c || !o)
		return 0;
	o->ssthresh = reno_ssthresh(c);
	return 0;
}

SEC(".struct_ops.link")
struct tcp_congestion_ops lia = {
	.init = (void *)mpcc_init,
	.release = (void *)mpcc_release,
	.ssthresh = (void *)mpcc_ssthresh,
	.cong_avoid = (void *)mpcc_cong_avoid,
	.set_state = (void *)mpcc_set_state,
	.undo_cwnd = (void *)mpcc_undo_cwnd,
	.name = "mptcp_lia",
};
