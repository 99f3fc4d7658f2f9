/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cc_conn.h: the snapshot of an MPTCP connection that every algorithm
 * decides from (struct mpcc_conn): the subflow being acted on in p[0], then
 * each sibling coupled with it. A plain TCP socket, or a subflow with no
 * coupled sibling, is a connection of one path, on which every algorithm
 * reduces to Reno. Included by cc_skel.h and cc_lisa.h.
 *
 * The walk itself is mptcp.h's. It runs under the subflow's socket lock
 * only, not the MPTCP socket's, so a sibling may change under us: reads
 * through rdonly casts cannot fault, a torn read only skews one ACK's
 * increase, and the loop is bounded.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "cc_maps.h"
#include "cc_priv.h"
#include "cc_types.h"
#include "mptcp.h"

#define TCP_ESTABLISHED 1

/*
 * What an algorithm reads of its siblings besides their windows and RTTs,
 * which every algorithm reads. A sibling is another CPU's socket, written
 * on each of its own ACKs, so every cache line of it read on every ACK of
 * this subflow may have to come from that CPU: its min_rtt and the words
 * of its loss distance are on three lines of their own (Linux 6.18) that
 * most algorithms never look at. An algorithm file that reads less
 * defines MPCC_SIBLING_READS before it includes cc_skel.h; the default is
 * everything, so an algorithm sees every field until it says otherwise.
 * A field not read is 0 in the snapshot (and in the trace); p[0], the
 * subflow's own, always has every field.
 */
#define MPCC_READS_MIN_RTT 1    /* p[k].min_rtt_us of the siblings */
#define MPCC_READS_LOSS_BYTES 2 /* p[k].loss_bytes of the siblings (OLIA's l_r) */
#ifndef MPCC_SIBLING_READS
#define MPCC_SIBLING_READS (MPCC_READS_MIN_RTT | MPCC_READS_LOSS_BYTES)
#endif

static __always_inline __u32 srtt_us_of(__u32 srtt8)
{
	__u32 srtt = srtt8 >> 3;

	return srtt ? srtt : 1;
}

/* OLIA's l_r: the larger of the bytes between the last two losses and the
 * bytes since the last loss. */
static __always_inline __u64 inter_loss_bytes(__u64 acked, __u64 mark, __u64 gap)
{
	__u64 since = acked - mark;

	return since > gap ? since : gap;
}

/*
 * A sibling is coupled when it is established and runs the very same
 * congestion control instance (same ops pointer: a sibling under another CC,
 * or under an older load of this one, is not). Returns it as an icsk.
 */
static __always_inline struct inet_connection_sock *
mpcc_coupled_sibling(struct sock *ssk, const struct tcp_congestion_ops *ops)
{
	struct inet_connection_sock *sicsk;

	sicsk = bpf_rdonly_cast(ssk, bpf_core_type_id_kernel(struct inet_connection_sock));
	if ((__u64)sicsk->icsk_ca_ops != (__u64)ops)
		return NULL;
	if (sicsk->icsk_inet.sk.__sk_common.skc_state != TCP_ESTABLISHED)
		return NULL;
	return sicsk;
}

/* One step of a walk that keeps only coupled siblings: the next one, NULL
 * for a node to skip (*sicsk is set when it is not). *end is set when the
 * list is done. */
static __always_inline struct sock *
mpcc_next_coupled(struct mptcp_walk *w, const struct sock *sk, const struct tcp_congestion_ops *ops,
		  bool *end, struct inet_connection_sock **sicsk)
{
	struct sock *ssk = mptcp_walk_next(w, sk, end);

	if (!ssk || !(*sicsk = mpcc_coupled_sibling(ssk, ops)))
		return NULL;
	return ssk;
}

static __always_inline void mpcc_self_path(const struct sock *sk, struct mpcc_path *p)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct mpcc_priv *ca = mpcc_ca(sk);

	p->cwnd = tp->snd_cwnd;
	p->srtt_us = srtt_us_of(tp->srtt_us);
	p->min_rtt_us = tp->rtt_min.s[0].v;
	p->loss_bytes = inter_loss_bytes(tp->bytes_acked, ca->loss_mark, ca->loss_gap);
}

/* Snapshot of the connection: this subflow in p[0], then its coupled siblings. */
static __always_inline void mpcc_collect(const struct sock *sk, struct mpcc_conn *c)
{
	const struct tcp_congestion_ops *ops = inet_csk(sk)->icsk_ca_ops;
	struct mptcp_sock *msk = mptcp_msk_ro(sk);
	struct mptcp_walk w;
	bool end = false;
	__u32 n = 1, i;

	c->target_us = mpcc_params()->rsf_target_us;
	mpcc_self_path(sk, &c->p[0]);
	c->n = 1;
	if (!msk)
		return;

	mptcp_walk_start(&w, msk);
	for (i = 0; i < MPTCP_WALK_MAX && n < MPCC_MAX_PATHS; i++) {
		struct mpcc_path *p = &c->p[n & (MPCC_MAX_PATHS - 1)];
		struct inet_connection_sock *sicsk;
		struct tcp_sock *stp;
		struct sock *ssk;

		ssk = mpcc_next_coupled(&w, sk, ops, &end, &sicsk);
		if (end)
			break;
		if (!ssk)
			continue;
		stp = bpf_rdonly_cast(ssk, bpf_core_type_id_kernel(struct tcp_sock));
		if (!stp->srtt_us || !stp->snd_cwnd)
			continue;
		p->cwnd = stp->snd_cwnd;
		p->srtt_us = srtt_us_of(stp->srtt_us);
		/* Constant conditions: the compiler drops what the algorithm
		 * does not read. */
		p->min_rtt_us = MPCC_SIBLING_READS & MPCC_READS_MIN_RTT ? stp->rtt_min.s[0].v : 0;
		p->loss_bytes = 0;
		if (MPCC_SIBLING_READS & MPCC_READS_LOSS_BYTES)
			/* The two words of the sibling's mpcc_priv that OLIA
			 * needs, read as the socket's own fields through the
			 * rdonly cast: no helper call per sibling. */
			p->loss_bytes = inter_loss_bytes(stp->bytes_acked,
							 sicsk->icsk_ca_priv[MPCC_PRIV_WORD(loss_mark)],
							 sicsk->icsk_ca_priv[MPCC_PRIV_WORD(loss_gap)]);
		n++;
	}
	c->n = n;
}
