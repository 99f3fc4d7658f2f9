/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cc_obs.h: what user space sees of a congestion control at work: each
 * subflow's record in the subflows map (who it is, filled once at init; its
 * window and counters, refreshed as init, ssthresh and set_state end, and
 * as cong_avoid ends once the record has aged, see mpcc_refresh) and,
 * while params.trace is set, every decision with its inputs in the trace
 * ring buffer. Included by cc_skel.h.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "cc_lisa.h"
#include "cc_maps.h"
#include "cc_priv.h"
#include "cc_types.h"
#include "mptcp.h"

/* The subflow's local id for its record (__u8): mptcp.h reads it with the
 * size the running kernel declares; one not set yet (negative, s16 kernels)
 * is 0, as the kernel reads it (subflow_get_local_id) and as the u8 kernels
 * hold it. */
static __always_inline __u8 mpcc_local_id(const struct mptcp_subflow_context *ctx)
{
	int id = mptcp_local_id(ctx);

	return id < 0 ? 0 : (__u8)id;
}

static __always_inline void mpcc_fill_identity(const struct sock *sk, struct mpcc_subflow *s)
{
	const struct sock_common *skc = &sk->__sk_common;
	struct mptcp_sock *msk = mptcp_msk_ro(sk);

	sk_addrs(skc, &s->family, &s->sport, &s->dport, s->saddr, s->daddr);
	if (msk) {
		struct mptcp_subflow_context *ctx = mptcp_subflow_ro(sk);

		s->flags |= MPCC_F_MPTCP;
		s->token = msk->token;
		s->local_id = mpcc_local_id(ctx);
		s->remote_id = ctx->remote_id;
		if (bpf_core_field_exists(ctx->subflow_id))
			s->subflow_id = ctx->subflow_id;
		if (BPF_CORE_READ_BITFIELD(ctx, backup))
			s->flags |= MPCC_F_BACKUP;
	}
}

static __always_inline __u8 mpcc_ca_state(const struct sock *sk)
{
	return BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
}

/* Repay a LISA debt outside the record update (the ssthresh hook, before
 * it decides the reduction). */
static __always_inline void mpcc_repay_now(struct sock *sk, bool reducing)
{
	__u64 id = mpcc_ca(sk)->id;
	struct mpcc_subflow *s = bpf_map_lookup_elem(&subflows, &id);

	if (s)
		mpcc_lisa_repay(sk, s, reducing);
}

/* mpcc_update's entering when no state change is under way. */
#define MPCC_STATE_NOW 0xff

/* Refresh this subflow's map entry (npaths 0: keep the last count), after
 * giving up any window a joining sibling took (LISA), so that the entry
 * shows the window the subflow runs with. entering: the CA state set_state
 * is entering, MPCC_STATE_NOW elsewhere. */
static __always_inline void mpcc_update(struct sock *sk, __u32 npaths, __u8 entering)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_priv *ca = mpcc_ca(sk);
	__u8 now = mpcc_ca_state(sk), state;
	struct mpcc_subflow *s;
	__u64 id = ca->id;

	s = bpf_map_lookup_elem(&subflows, &id);
	if (!s)
		return;

	state = entering == MPCC_STATE_NOW ? now : entering;
	mpcc_lisa_repay(sk, s, state >= TCP_CA_CWR && state <= TCP_CA_Loss);

	if (!s->token && tp->is_mptcp) {
		struct mptcp_sock *msk = mptcp_msk_ro(sk);

		if (msk)
			s->token = msk->token;
	}
	mpcc_record_socket(s, sk, tp);
	s->ca_state = now;
	s->coupled = ca->coupled;
	s->repairs = ca->repairs;
	if (sk->sk_pacing_status != SK_PACING_NONE) /* ours, or an fq qdisc's */
		s->flags |= MPCC_F_PACED;
	else
		s->flags &= ~MPCC_F_PACED;
	if (npaths)
		s->npaths = npaths;
	s->updated_ns = bpf_ktime_get_ns();
	ca->shown_us = tp->tcp_mstamp;
	ca->shown_npaths = s->npaths;
	ca->lisa = mpcc_params()->lisa;
}

/* How old the record may grow between cong_avoid's refreshes. Readers
 * sample every 100 ms at the most often (`mptcp-cc top`), so they cannot
 * tell; refreshing on every ACK cost more than the algorithm itself (the
 * map lookup, the clock read and the stores: on the goodput bench
 * cong_avoid took 337 ns a call refreshing every ACK, 135 ns not
 * refreshing at all). A record at rest may lag the socket by the last
 * millisecond of its ACKs; a loss or a state change refreshes it at
 * once (the ssthresh and set_state callbacks). */
#define MPCC_REFRESH_US 1000

/*
 * cong_avoid's refresh: MPCC_REFRESH_US after the last one, by the
 * socket's own clock of this ACK (tcp_mstamp: no helper call), at once
 * when the coupled path count changed (a subflow joined or left), and on
 * every ACK under LISA, whose debts (mpcc_lisa_repay) wait for no timer.
 * Everything it reads is in the socket (the flag too: mpcc_priv.lisa).
 */
static __always_inline void mpcc_refresh(struct sock *sk, __u32 npaths)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct mpcc_priv *ca = mpcc_ca(sk);

	if (tp->tcp_mstamp - ca->shown_us >= MPCC_REFRESH_US ||
	    (npaths && npaths != ca->shown_npaths) || ca->lisa)
		mpcc_update(sk, npaths, MPCC_STATE_NOW);
}

/* One decision for the differential test: the snapshot it was made from and
 * the state before and after, so pkg/model can replay it. */
static __always_inline void mpcc_trace(const struct sock *sk, __u32 kind, __u32 acked,
				       __u32 cwnd_before, __s64 acc_before, __u32 ssthresh,
				       const struct mpcc_conn *c)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct mpcc_priv *ca = mpcc_ca(sk);
	struct mpcc_trace_event *e;

	e = bpf_ringbuf_reserve(&trace, sizeof(*e), 0);
	if (!e)
		return;
	e->id = ca->id;
	e->kind = kind;
	e->acked = acked;
	e->cwnd_before = cwnd_before;
	e->acc_before = acc_before;
	e->ssthresh = ssthresh;
	e->clamp = tp->snd_cwnd_clamp;
	e->cwnd_after = tp->snd_cwnd;
	e->acc_after = ca->acc;
	e->ssthresh_after = tp->snd_ssthresh;
	e->coupled = ca->coupled;
	__builtin_memcpy(&e->conn, c, sizeof(*c));
	bpf_ringbuf_submit(e, 0);
}
