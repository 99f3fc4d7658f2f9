/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cc_skel.h: the skeleton every coupled congestion control in bpf/cc/ is
 * built on: the tcp_congestion_ops callbacks, Reno around two hooks. Each
 * algorithm file includes this header, implements
 *
 *   algo_increase(c, o)  o->inc: cwnd increase per ACKed packet in congestion
 *                        avoidance, Q32 (MPCC_ONE == one packet);
 *   algo_ssthresh(c, o)  o->ssthresh: the window after a loss, in packets
 *                        (MPCC_RENO_SSTHRESH() when that is Reno's half);
 *
 * either of them setting o->coupled, the algorithm's coupled quantity
 * (algo_ssthresh finds the last one there), and ends with MPCC_STRUCT_OPS().
 * The hooks see only the connection snapshot (cc_conn.h) and answer in
 * fixed point (cc_fixed.h); everything else a callback does (slow start,
 * the accumulator, the guard, the map and the trace) is the same for every
 * algorithm, and is done here or in the headers included below.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cc_types.h"

char _license[] SEC("license") = "Dual BSD/GPL";

/* The algorithm's id, set by the loader from the table in pkg/algo (which
 * refuses an object without it): the top byte of every subflow id, and
 * mpcc_subflow.algo. 0 only in an object no loader touched. */
const volatile __u32 mpcc_algo_id = 0;

/* Each algorithm is its own object, so each loaded CC has its own maps. */
#include "cc_maps.h"
#include "cc_priv.h"
#include "cc_conn.h"
#include "cc_fixed.h"
#include "cc_guard.h"
#include "cc_lisa.h"
#include "cc_obs.h"

#define TCP_CA_CWR 2
#define TCP_CA_Loss 4

/*
 * The hooks are global functions on purpose: the verifier then checks each
 * once, for any c->n, instead of once per path through the connection walk,
 * which would not fit its budget.
 */
__noinline int algo_increase(const struct mpcc_conn *c, struct mpcc_out *o);
__noinline int algo_ssthresh(const struct mpcc_conn *c, struct mpcc_out *o);

/* ---- Reno ---- */

static __always_inline bool tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

static __always_inline bool tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	/* The kernel's tcp_is_cwnd_limited: limited in this window, or in
	 * slow start while under twice what was in flight. */
	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

/* Reno's window after a loss: half, at least two packets. */
static __always_inline __u32 reno_ssthresh(const struct mpcc_conn *c)
{
	__u32 w = c->p[0].cwnd >> 1;

	return w > 2 ? w : 2;
}

/* ---- the tcp_congestion_ops callbacks ---- */

SEC("struct_ops")
void BPF_PROG(mpcc_init, struct sock *sk)
{
	struct mpcc_priv *ca = mpcc_ca(sk);
	struct mpcc_subflow s = {};
	__u64 id;

	id = ((__u64)mpcc_algo_id << 56) | __sync_add_and_fetch(&next_id, 1);
	ca->id = id;
	ca->acc = 0;
	ca->loss_mark = 0;
	ca->loss_gap = 0;
	ca->coupled = 0;
	ca->wmax = tcp_sk(sk)->snd_cwnd;
	ca->repairs = 0;
	ca->shown_us = 0;
	ca->shown_npaths = 0;
	ca->lisa = mpcc_params()->lisa;

	s.id = id;
	s.algo = mpcc_algo_id;
	mpcc_fill_identity(sk, &s);
	if (bpf_map_update_elem(&subflows, &id, &s, BPF_ANY)) {
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&untracked, &zero);

		if (n)
			__sync_fetch_and_add(n, 1);
	}

	if (mpcc_params()->lisa)
		mpcc_lisa_join(sk);
	/* params.pacing: each subflow spreads its window over the RTT instead
	 * of sending it in bursts. Measured at a drop-tail queue shared with
	 * a TCP flow at 1 ms base RTT, two unpaced subflows lost 2.4-5.3x as
	 * many packets per packet sent as the TCP flow, paced 1.7-1.8x
	 * (docs/results/fairness.md). The kernel's own TCP pacing
	 * (tcp_needs_internal_pacing) does it where no fq qdisc does. */
	if (mpcc_params()->pacing && sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
	mpcc_seen(ca, tcp_sk(sk)->snd_cwnd);
	mpcc_update(sk, 0, MPCC_STATE_NOW);
}

SEC("struct_ops")
void BPF_PROG(mpcc_release, struct sock *sk)
{
	struct mpcc_priv *ca = mpcc_ca(sk);
	__u64 id = ca->id;

	if (id)
		bpf_map_delete_elem(&subflows, &id);
	ca->id = 0;
}

/*
 * Congestion avoidance proper, for the ACKs that reach it: the snapshot of
 * the connection, the algorithm's increase, the accumulator, the trace.
 * Returns the coupled path count. Apart from the callback so that its
 * snapshot (zeroed on the stack) and its code are not touched on the
 * other ACKs: in a fast transfer most ACKs find the subflow not limited by
 * its window, and on the goodput bench the callback's time went to what
 * every ACK touches, not to the coupling.
 */
static __always_inline __u32 mpcc_avoid(struct sock *sk, __u32 acked, __u32 acked_in, __u32 cwnd_before)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_priv *ca = mpcc_ca(sk);
	struct mpcc_conn c = {};
	struct mpcc_out o = {};
	__s64 acc_before = ca->acc, delta;

	mpcc_collect(sk, &c);
	algo_increase(&c, &o);
	ca->coupled = o.coupled;
	ca->acc += o.inc * acked;
	delta = ca->acc >> 32; /* arithmetic: floor, also for negative sums */
	if (delta) {
		__s64 cwnd = (__s64)tp->snd_cwnd + delta;

		ca->acc -= delta << 32;
		if (cwnd < 1)
			cwnd = 1;
		if (cwnd > tp->snd_cwnd_clamp)
			cwnd = tp->snd_cwnd_clamp;
		tp->snd_cwnd = cwnd;
		/* A coupled decrease (OLIA's negative alpha) is congestion
		 * avoidance too: keep ssthresh at the window, or the next ACK
		 * would slow-start straight back and undo it. */
		if (delta < 0 && tp->snd_ssthresh > tp->snd_cwnd)
			tp->snd_ssthresh = tp->snd_cwnd;
	}
	if (mpcc_params()->trace)
		mpcc_trace(sk, MPCC_TRACE_AVOID, acked_in, cwnd_before, acc_before,
			   tp->snd_ssthresh, &c);
	return c.n;
}

SEC("struct_ops")
void BPF_PROG(mpcc_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_priv *ca = mpcc_ca(sk);
	__u32 cwnd_before, acked_in = acked, npaths = 0;

	mpcc_guard(sk);
	cwnd_before = tp->snd_cwnd;
	if (!tcp_is_cwnd_limited(sk))
		goto out;

	if (tcp_in_slow_start(tp)) {
		__u32 cwnd = tp->snd_cwnd + acked;

		if (cwnd > tp->snd_ssthresh)
			cwnd = tp->snd_ssthresh;
		acked -= cwnd - tp->snd_cwnd;
		tp->snd_cwnd = cwnd < tp->snd_cwnd_clamp ? cwnd : tp->snd_cwnd_clamp;
		if (!acked)
			goto out;
	}

	npaths = mpcc_avoid(sk, acked, acked_in, cwnd_before);
out:
	mpcc_seen(ca, tp->snd_cwnd);
	mpcc_refresh(sk, npaths);
}

SEC("struct_ops")
__u32 BPF_PROG(mpcc_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_priv *ca = mpcc_ca(sk);
	struct mpcc_conn c = {};
	struct mpcc_out o = {};

	mpcc_guard(sk);
	/* A window a joiner took is repaid first, so the reduction applies to
	 * the window this subflow keeps. */
	mpcc_repay_now(sk, false);
	/* OLIA's inter-loss distance: close the current interval. */
	ca->loss_gap = tp->bytes_acked - ca->loss_mark;
	ca->loss_mark = tp->bytes_acked;
	ca->acc = 0;

	mpcc_collect(sk, &c);
	o.coupled = ca->coupled; /* hooks that do not recompute it keep it */
	algo_ssthresh(&c, &o);
	ca->coupled = o.coupled;
	if (mpcc_params()->trace)
		mpcc_trace(sk, MPCC_TRACE_LOSS, 0, tp->snd_cwnd, 0, o.ssthresh, &c);
	mpcc_update(sk, c.n, MPCC_STATE_NOW);
	return o.ssthresh;
}

SEC("struct_ops")
__u32 BPF_PROG(mpcc_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	return tp->snd_cwnd > tp->prior_cwnd ? tp->snd_cwnd : tp->prior_cwnd;
}

SEC("struct_ops")
void BPF_PROG(mpcc_set_state, struct sock *sk, __u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_priv *ca = mpcc_ca(sk);

	/* Entering CWR, Recovery or Loss follows the ssthresh call at once: an
	 * implausible value here is the kernel's, not ours (see cc_guard.h).
	 * Replace it with what our hook returns for the window of the loss,
	 * before the end of recovery copies it into cwnd. */
	if (new_state >= TCP_CA_CWR && new_state <= TCP_CA_Loss &&
	    !mpcc_ssthresh_plausible(ca, tp->snd_ssthresh)) {
		struct mpcc_conn c = {};
		struct mpcc_out o = {};

		mpcc_collect(sk, &c);
		c.p[0].cwnd = mpcc_loss_window(tp, ca);
		o.coupled = ca->coupled;
		algo_ssthresh(&c, &o);
		tp->snd_ssthresh = o.ssthresh > 2 ? o.ssthresh : 2;
		ca->repairs++;
	}
	mpcc_guard(sk);
	mpcc_update(sk, 0, new_state);
}

/* ---- what an algorithm file writes once ---- */

/* algo_ssthresh for an algorithm that halves on loss, as Reno. The
 * coupled quantity is left as the last increase set it. */
#define MPCC_RENO_SSTHRESH()                                                     \
	__noinline int algo_ssthresh(const struct mpcc_conn *c, struct mpcc_out *o) \
	{                                                                        \
		if (!c || !o)                                                    \
			return 0;                                                \
		o->ssthresh = reno_ssthresh(c);                                  \
		return 0;                                                        \
	}

/* The struct_ops map of algorithm `sym`, registered as congestion control
 * `cc_name` (what pkg/cc's registry and setsockopt(TCP_CONGESTION) use). */
#define MPCC_STRUCT_OPS(sym, cc_name)                   \
	SEC(".struct_ops.link")                         \
	struct tcp_congestion_ops sym = {               \
		.init = (void *)mpcc_init,              \
		.release = (void *)mpcc_release,        \
		.ssthresh = (void *)mpcc_ssthresh,      \
		.cong_avoid = (void *)mpcc_cong_avoid,  \
		.set_state = (void *)mpcc_set_state,    \
		.undo_cwnd = (void *)mpcc_undo_cwnd,    \
		.name = cc_name,                        \
	}
