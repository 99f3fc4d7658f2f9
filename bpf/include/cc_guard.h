/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cc_guard.h: the window guard, a workaround for a kernel fault and nothing
 * else. It lives alone in this file so that it is easy to find and, once the
 * kernel no longer needs it, to delete: remove this file, its include and
 * its uses in cc_skel.h (mpcc_guard, mpcc_seen, the wmax and repairs of
 * mpcc_init, the repair in mpcc_set_state). mpcc_priv.wmax/repairs and
 * mpcc_subflow.repairs exist for it only.
 *
 * On Linux 6.18 the kernel, about once in several thousand reductions, stores
 * a value that no hook of ours returned as ssthresh: 667,073,280-style
 * numbers (they look like the low half of a kernel address) appear right
 * after a loss, while our ssthresh program's run count shows it did not run
 * for that loss (docs/algorithms.md, "The window guard"). At the end of
 * recovery the kernel copies ssthresh into cwnd, and the subflow then bursts
 * its whole send buffer. We cannot fix the call; we can refuse its result:
 * every legitimate ssthresh is a value our hook returned or the kernel's undo
 * of one, so it never exceeds the largest window the subflow has had. A value
 * above twice that (and above 2^16 packets, so a fresh subflow with a large
 * initial window is never questioned) is replaced by what our hook would
 * have returned at that loss.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "cc_priv.h"

#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define MPCC_GUARD_FLOOR (1U << 16)

static __always_inline void mpcc_seen(struct mpcc_priv *ca, __u32 w)
{
	if (w > ca->wmax)
		ca->wmax = w;
}

static __always_inline bool mpcc_plausible(const struct mpcc_priv *ca, __u32 w)
{
	__u64 bound = 2 * (__u64)ca->wmax + 16;

	return w <= (bound > MPCC_GUARD_FLOOR ? bound : MPCC_GUARD_FLOOR);
}

static __always_inline bool mpcc_ssthresh_plausible(const struct mpcc_priv *ca, __u32 ss)
{
	return ss == TCP_INFINITE_SSTHRESH || mpcc_plausible(ca, ss);
}

/* The window the loss began at: prior_cwnd, unless that is implausible too. */
static __always_inline __u32 mpcc_loss_window(const struct tcp_sock *tp, const struct mpcc_priv *ca)
{
	__u32 w = tp->prior_cwnd;

	if (!w || !mpcc_plausible(ca, w))
		w = ca->wmax;
	return w ? w : 2;
}

/*
 * Replace an implausible ssthresh by Reno's cut of the loss window (what
 * every algorithm here returns on one path; set_state refines it with the
 * coupled value where it can), and an implausible cwnd by ssthresh, which is
 * what the kernel would have set it to.
 *
 * A function of its own, called only when a value is implausible (once in
 * thousands of losses): its code stays out of the straight line every ACK
 * runs, which on a fast transfer is mostly cold in the instruction cache.
 */
static __noinline void mpcc_guard_repair(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_priv *ca = mpcc_ca(sk);
	bool fixed = false;
	__u32 w;

	if (!mpcc_ssthresh_plausible(ca, tp->snd_ssthresh)) {
		w = mpcc_loss_window(tp, ca) >> 1;
		tp->snd_ssthresh = w > 2 ? w : 2;
		fixed = true;
	}
	if (!mpcc_plausible(ca, tp->snd_cwnd)) {
		w = tp->snd_ssthresh;
		if (w == TCP_INFINITE_SSTHRESH || w > ca->wmax)
			w = ca->wmax;
		tp->snd_cwnd = w > 2 ? w : 2;
		fixed = true;
	}
	if (fixed)
		ca->repairs++;
}

/* The guard: repair what is implausible, then remember the window. */
static __always_inline void mpcc_guard(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_priv *ca = mpcc_ca(sk);

	if (!mpcc_ssthresh_plausible(ca, tp->snd_ssthresh) || !mpcc_plausible(ca, tp->snd_cwnd))
		mpcc_guard_repair(sk);
	mpcc_seen(ca, tp->snd_cwnd);
}
