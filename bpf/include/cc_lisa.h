/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cc_lisa.h: LISA, linked slow start (seed 000), on when params.lisa is set.
 * A joining subflow takes half of the window of the established sibling
 * with the largest window, instead of an independent slow start, so a join
 * adds no window to the connection; the donor gives the share up on its
 * next ACK. Included by cc_obs.h and cc_skel.h: mpcc_lisa_join runs from
 * init, mpcc_lisa_repay from the record update (mpcc_update) that the
 * callbacks end with.
 *
 * The share goes through the donor's subflows map entry (lisa_debt) because
 * the joiner cannot write the donor's socket: siblings are read-only.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "cc_conn.h"
#include "cc_maps.h"
#include "cc_priv.h"
#include "mptcp.h"

/*
 * With no donor large enough to spare an initial window, the kernel's
 * initial window (RFC 6928) stays.
 */
static __always_inline void mpcc_lisa_join(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mptcp_sock *msk = mptcp_msk_ro(sk);
	const struct tcp_congestion_ops *ops = inet_csk(sk)->icsk_ca_ops;
	struct mptcp_walk w;
	bool end = false;
	__u64 donor_id = 0;
	__u32 donor_cwnd = 0, donor_ssthresh = 0, share, i;
	struct mpcc_subflow *d;

	if (!msk)
		return;
	mptcp_walk_start(&w, msk);
	for (i = 0; i < MPTCP_WALK_MAX; i++) {
		struct inet_connection_sock *sicsk;
		struct tcp_sock *stp;
		struct sock *ssk;
		__u64 sid;

		ssk = mpcc_next_coupled(&w, sk, ops, &end, &sicsk);
		if (end)
			break;
		if (!ssk)
			continue;
		/* mpcc_priv.id: the donor's subflows map key */
		sid = sicsk->icsk_ca_priv[MPCC_PRIV_WORD(id)];
		stp = bpf_rdonly_cast(ssk, bpf_core_type_id_kernel(struct tcp_sock));
		if (sid && stp->snd_cwnd > donor_cwnd) {
			donor_cwnd = stp->snd_cwnd;
			donor_ssthresh = stp->snd_ssthresh;
			donor_id = sid;
		}
	}

	share = donor_cwnd / 2;
	if (!donor_id || share < tp->snd_cwnd)
		return;
	d = bpf_map_lookup_elem(&subflows, &donor_id);
	if (!d)
		return;
	__sync_fetch_and_add(&d->lisa_debt, share);
	__sync_fetch_and_add(&d->lisa_given, share);
	tp->snd_cwnd = share;
	/* The newcomer joins the donor's phase: slow start while the donor
	 * still slow-starts (the two then grow like one flow), congestion
	 * avoidance once the donor has found the path's limit. */
	if (donor_cwnd >= donor_ssthresh)
		tp->snd_ssthresh = share;

	donor_id = mpcc_ca(sk)->id;
	d = bpf_map_lookup_elem(&subflows, &donor_id);
	if (d) {
		d->lisa_taken = share;
		d->cwnd = share;
	}
}

/*
 * The donor's window after it gives up debt packets (pkg/model.LISARepay
 * mirrors it; the differential test compares them). Repayment never grows a
 * window and never raises ssthresh:
 *
 * - Outside a window reduction, cwnd loses the debt. A donor past slow start
 *   stays past it: ssthresh comes down to the new cwnd, or it would
 *   slow-start straight back to its old window and the join would add a
 *   window after all.
 * - During a reduction (CWR, Recovery, Loss), ssthresh is the window the
 *   reduction heads for, computed from a loss window that still held the
 *   debt. It shrinks by the debt's share of that window, so the halving
 *   applies to what the donor kept: (W - debt) / 2 for Reno. Taking
 *   ssthresh down to the new cwnd instead (what the first version did) put
 *   it back above the halved value and undid the reduction.
 */
static __always_inline void mpcc_lisa_pay(__u32 *cwnd, __u32 *ssthresh, __u32 debt,
					  __u32 loss_window, bool reducing)
{
	__u32 w = *cwnd, ss = *ssthresh;

	if (w > debt + 2)
		w -= debt;
	else if (w > 2)
		w = 2;
	if (reducing) {
		__u32 scaled = 2;

		if (loss_window > debt)
			scaled = (__u64)ss * (loss_window - debt) / loss_window;
		if (scaled < 2)
			scaled = 2;
		if (scaled < ss)
			ss = scaled;
	} else if (*cwnd >= ss && w < ss) {
		ss = w;
	}
	*cwnd = w;
	*ssthresh = ss;
}

static __always_inline void mpcc_trace_lisa(const struct sock *sk, __u32 debt, __u32 loss_window,
					    bool reducing, __u32 cwnd_before, __u32 ssthresh_before,
					    __u32 cwnd_after, __u32 ssthresh_after)
{
	struct mpcc_trace_event *e;

	e = bpf_ringbuf_reserve(&trace, sizeof(*e), 0);
	if (!e)
		return;
	__builtin_memset(e, 0, sizeof(*e));
	e->id = mpcc_ca(sk)->id;
	e->kind = MPCC_TRACE_LISA;
	e->acked = debt;
	e->cwnd_before = cwnd_before;
	e->ssthresh = ssthresh_before;
	e->cwnd_after = cwnd_after;
	e->ssthresh_after = ssthresh_after;
	e->clamp = loss_window;
	e->flags = reducing ? MPCC_TRACE_F_REDUCING : 0;
	bpf_ringbuf_submit(e, 0);
}

/* The donor's side: give up the window a joining sibling took (s is this
 * subflow's map entry). reducing: the subflow is in, or entering, CWR,
 * Recovery or Loss. */
static __always_inline void mpcc_lisa_repay(struct sock *sk, struct mpcc_subflow *s, bool reducing)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 debt, cwnd, ssthresh;

	if (!s->lisa_debt)
		return;
	debt = __sync_lock_test_and_set(&s->lisa_debt, 0);
	cwnd = tp->snd_cwnd;
	ssthresh = tp->snd_ssthresh;
	mpcc_lisa_pay(&cwnd, &ssthresh, debt, tp->prior_cwnd, reducing);
	if (mpcc_params()->trace)
		mpcc_trace_lisa(sk, debt, tp->prior_cwnd, reducing, tp->snd_cwnd, tp->snd_ssthresh,
				cwnd, ssthresh);
	tp->snd_cwnd = cwnd;
	tp->snd_ssthresh = ssthresh;
}
