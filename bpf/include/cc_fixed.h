/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cc_fixed.h: the fixed-point arithmetic of the coupled congestion controls,
 * and the contract with pkg/model, which mirrors every scale and every
 * rounding here and must give bit-identical results (the differential test
 * replays the BPF decisions through it). Included by cc_skel.h; the
 * algorithm files in bpf/cc/ use it directly.
 *
 * BPF has no floating point, and the papers' coupled terms
 * (w_k/rtt_k^2) / (sum_j w_j/rtt_j)^2 overflow 64 bits when computed as
 * written. Rewritten with rate shares s_k = x_k / sum(x), they become
 * s_k^2 / w_k: a bounded share squared over a window, which cannot overflow.
 */
#pragma once

#include "cc_types.h"

/*
 * Scales (pkg/model/model.go has the same constants):
 *   rate       x_k = min(cwnd_k, MPCC_CWND_CAP) << MPCC_RATE_SHIFT / srtt_us_k
 *              packets per microsecond, scaled by 2^27; at most 2^47, so
 *              x_k << MPCC_SHARE_SHIFT still fits in 64 bits.
 *   share      s_k = x_k << MPCC_SHARE_SHIFT / sum(x): Q16, in [0, 1].
 *   increment  cwnd change per ACKed packet and the coupled quantities: Q32,
 *              signed (OLIA's alpha can be negative); MPCC_ONE is a packet.
 */
#define MPCC_ONE (1LL << 32)       /* Q32: one packet of cwnd */
#define MPCC_SHARE_SHIFT 16
#define MPCC_SHARE_ONE (1U << MPCC_SHARE_SHIFT) /* Q16: a share of 1 */
#define MPCC_RATE_SHIFT 27
#define MPCC_CWND_CAP (1U << 20)   /* windows above this count as this much */

static __always_inline __u64 mpcc_rate(const struct mpcc_path *p)
{
	__u64 w = p->cwnd < MPCC_CWND_CAP ? p->cwnd : MPCC_CWND_CAP;

	return (w << MPCC_RATE_SHIFT) / p->srtt_us;
}

/* Rate shares s_k (Q16) of every path; returns the largest share. (A value,
 * not an index: an index would stay precise for the verifier and multiply
 * the paths it explores.) */
static __always_inline __u32 mpcc_shares(const struct mpcc_conn *c, __u32 s[MPCC_MAX_PATHS])
{
	__u64 x[MPCC_MAX_PATHS] = {}, sum = 0;
	__u32 i, smax = 0;

	for (i = 0; i < MPCC_MAX_PATHS; i++) {
		if (i >= c->n)
			break;
		x[i] = mpcc_rate(&c->p[i]);
		sum += x[i];
	}
	for (i = 0; i < MPCC_MAX_PATHS; i++) {
		if (i >= c->n)
			break;
		s[i] = sum ? (__u32)((x[i] << MPCC_SHARE_SHIFT) / sum) : MPCC_SHARE_ONE;
		if (s[i] > smax)
			smax = s[i];
	}
	return smax;
}

/* s^2 / w in Q32: a path's coupled increase per ACK. */
static __always_inline __s64 share2_over_w(__u32 s, __u32 w)
{
	return (__s64)(((__u64)s * s) / (w ? w : 1));
}

static __always_inline __s64 one_over_w(__u32 w)
{
	return MPCC_ONE / (w ? w : 1);
}

/*
 * The coupled increase of RFC 6356 (alpha / w_total): max_k s_k^2 / w_k, Q32.
 * With one path it is 1/w, Reno's. LIA caps it at 1/w_self; RSF uses it as
 * its floor.
 */
static __always_inline __s64 mpcc_lia_term(const struct mpcc_conn *c, const __u32 s[MPCC_MAX_PATHS])
{
	__s64 best = 0, t;
	__u32 i;

	for (i = 0; i < MPCC_MAX_PATHS; i++) {
		if (i >= c->n)
			break;
		t = share2_over_w(s[i], c->p[i].cwnd);
		if (t > best)
			best = t;
	}
	return best;
}
