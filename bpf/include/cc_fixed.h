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

	/* One path has all of the rate, however its own division would
	 * round: x << 16 / x is exactly 1, and a sum of 0 counts as 1. */
	if (c->n == 1) {
		s[0] = MPCC_SHARE_ONE;
		return MPCC_SHARE_ONE;
	}
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

static __always_inline __s64 one_over_w(__u32 w)
{
	return MPCC_ONE / (w ? w : 1);
}

/* A quotient not divided yet: num / den, den >= 1. */
struct mpcc_frac {
	__u64 num;
	__u32 den;
};

/*
 * The coupled increase of RFC 6356 (alpha / w_total): max_k s_k^2 / w_k,
 * as a fraction; mpcc_lia_term divides it (Q32). With one path it is 1/w,
 * Reno's. LIA caps it at 1/w_self; RSF uses it as its floor.
 *
 * pkg/model's LIATerm floors each path's quotient and takes the largest.
 * Flooring keeps the order, so that is the floor of the largest quotient:
 * the paths are compared by cross-multiplying (s^2 <= 2^32 and w < 2^32,
 * so s_i^2 * w_j < 2^64) and only the winner is divided, one division on
 * every ACK instead of one per path, with the same result for every input.
 */
static __always_inline struct mpcc_frac mpcc_lia_frac(const struct mpcc_conn *c,
						      const __u32 s[MPCC_MAX_PATHS])
{
	struct mpcc_frac best = {0, 1};
	__u64 s2;
	__u32 w, i;

	for (i = 0; i < MPCC_MAX_PATHS; i++) {
		if (i >= c->n)
			break;
		w = c->p[i].cwnd ? c->p[i].cwnd : 1;
		s2 = (__u64)s[i] * s[i];
		if (s2 * best.den > best.num * w) { /* s2 / w > num / den */
			best.num = s2;
			best.den = w;
		}
	}
	return best;
}

static __always_inline __s64 mpcc_lia_term(const struct mpcc_conn *c, const __u32 s[MPCC_MAX_PATHS])
{
	struct mpcc_frac f = mpcc_lia_frac(c, s);

	return (__s64)(f.num / f.den);
}

/* Whether f <= 1/w (w 0 counting as 1, as in one_over_w), by
 * cross-multiplying (num <= 2^32, w < 2^32, den < 2^32): then
 * floor(f) <= one_over_w(w) too, since flooring keeps the order, and
 * min(floor(f), one_over_w(w)) needs no second division. */
static __always_inline bool mpcc_frac_le_one_over_w(struct mpcc_frac f, __u32 w)
{
	return f.num * (w ? w : 1) <= (__u64)f.den << 32;
}
