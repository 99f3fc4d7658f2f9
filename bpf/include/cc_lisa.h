/* SPDX-License-Identifier: GPL-2.0 */
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
		/* mpcc_priv.id, the first word: the donor's subflows map key */
		if (bpf_probe_read_kernel(&sid, sizeof(sid), sicsk->icsk_ca_priv))
			continue;
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

/* The donor's side: give up the window a joining sibling took (s is this
 * subflow's map entry). */
static __always_inline void mpcc_lisa_repay(struct tcp_sock *tp, struct mpcc_subflow *s)
{
	__u32 debt = s->lisa_debt;

	if (debt) {
		/* A donor past slow start stays past it: without the lower
		 * ssthresh it would slow-start straight back to its old window
		 * and the join would add a window after all. */
		bool avoiding = tp->snd_cwnd >= tp->snd_ssthresh;

		debt = __sync_lock_test_and_set(&s->lisa_debt, 0);
		tp->snd_cwnd = tp->snd_cwnd > debt + 2 ? tp->snd_cwnd - debt : 2;
		if (avoiding)
			tp->snd_ssthresh = tp->snd_cwnd;
	}
}
