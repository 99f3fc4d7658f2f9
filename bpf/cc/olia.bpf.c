// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * OLIA, the Opportunistic Linked Increases Algorithm (Khalili et al., seed 003).
 *
 * Per ACK on path r:  w_r += (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2 + alpha_r / w_r
 *                          = (s_r^2 + alpha_r) / w_r       (s_r: rate share, cc_fixed.h)
 *   l_r = max(bytes between the last two losses, bytes since the last loss)
 *   B   = paths with the largest l_r / rtt_r^2     ("best" paths)
 *   M   = paths with the largest window
 *   alpha_r =  1 / (n |B\M|)   if r in B\M
 *           = -1 / (n |M|)     if r in M and B\M is not empty
 *           =  0               otherwise
 * On loss: halve, as Reno.
 *
 * Coupled quantity exported: alpha_r (Q32, signed).
 */
/* OLIA reads the siblings' windows, RTTs and loss distances l_r. (cc_conn.h) */
#define MPCC_SIBLING_READS MPCC_READS_LOSS_BYTES
#include "cc_skel.h"

/* l_r / rtt_r^2 on a common scale (2^42 bytes/us^2), for comparisons only.
 * Two divisions keep it in 64 bits for l up to 2^40 bytes. */
static __always_inline __u64 olia_metric(const struct mpcc_path *p)
{
	__u64 l = p->loss_bytes < (1ULL << 40) ? p->loss_bytes : (1ULL << 40);
	__u64 t = (l << 22) / p->srtt_us;

	return t < (1ULL << 40) ? (t << 20) / p->srtt_us : (t / p->srtt_us) << 20;
}

__noinline int algo_increase(const struct mpcc_conn *c, struct mpcc_out *o)
{
	__u32 s[MPCC_MAX_PATHS] = {}, wmax = 0, nm = 0, nbm = 0, i;
	__u64 m[MPCC_MAX_PATHS] = {}, best = 0;
	__s64 alpha = 0, num;
	bool self_b, self_m;

	if (!c || !o)
		return 0;
	mpcc_shares(c, s);
	for (i = 0; i < MPCC_MAX_PATHS; i++) {
		if (i >= c->n)
			break;
		m[i] = olia_metric(&c->p[i]);
		if (m[i] > best)
			best = m[i];
		if (c->p[i].cwnd > wmax)
			wmax = c->p[i].cwnd;
	}
	for (i = 0; i < MPCC_MAX_PATHS; i++) {
		if (i >= c->n)
			break;
		if (c->p[i].cwnd == wmax)
			nm++;
		else if (m[i] == best)
			nbm++;
	}
	self_b = m[0] == best;
	self_m = c->p[0].cwnd == wmax;
	if (nbm) {
		if (self_b && !self_m)
			alpha = MPCC_ONE / (c->n * nbm);
		else if (self_m)
			alpha = -(MPCC_ONE / (c->n * nm));
	}
	o->coupled = alpha;

	/* (s^2 + alpha) / w, truncated toward zero (no signed division in BPF v3) */
	num = (__s64)((__u64)s[0] * s[0]) + alpha;
	if (num >= 0)
		o->inc = (__s64)((__u64)num / c->p[0].cwnd);
	else
		o->inc = -(__s64)((__u64)(-num) / c->p[0].cwnd);
	return 0;
}

MPCC_RENO_SSTHRESH()

MPCC_STRUCT_OPS(olia, "mptcp_olia");
