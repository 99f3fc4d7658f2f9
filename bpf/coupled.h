/* SPDX-License-Identifier: GPL-2.0 */
/*
 * coupled.h: everything the coupled congestion controls share, written once.
 *
 * Each algorithm file (lia.bpf.c, olia.bpf.c, ...) defines MPCC_ALGO, includes
 * this header, implements two hooks and lists its tcp_congestion_ops:
 *
 *   algo_increase(c, &coupled)  cwnd increase per ACKed packet in congestion
 *                               avoidance, Q32 (MPCC_ONE == one packet);
 *   algo_ssthresh(c, &coupled)  the window after a loss, in packets.
 *
 * Both get a snapshot of the MPTCP connection (struct mpcc_conn): one entry per
 * subflow of the same connection that runs the same congestion control,
 * the subflow being acted on in c->p[0]. A plain TCP socket, or a
 * subflow with no coupled sibling, is a connection of one path, and every
 * algorithm then reduces to Reno.
 *
 * Fixed point (mirrored by pkg/model, which must give bit-identical results):
 *   rate   x_k = min(cwnd_k, 2^20) << 27 / srtt_us_k     (fits in 2^47)
 *   share  s_k = x_k << 16 / sum(x)                      Q16, in [0, 1]
 *   increments and coupled quantities                    Q32, signed
 * The shares are what make the formulas overflow-free: LIA's, OLIA's and
 * BALIA's coupled terms (w_k/rtt_k^2) / (sum_j w_j/rtt_j)^2 equal
 * s_k^2 / w_k, a bounded share squared over a window.
 *
 * The parent connection is reached read-only (bpf_rdonly_cast) through the
 * subflow context, and its subflow list is walked with a bounded loop. The
 * walk runs under the subflow's socket lock only, not the MPTCP socket's, so
 * a sibling may change under us: reads through rdonly casts cannot fault, a
 * torn read only skews one ACK's increase, and the loop is bounded.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "mpcc_types.h"
#include "mptcp.h"

char _license[] SEC("license") = "GPL";

#ifndef MPCC_ALGO
#error "define MPCC_ALGO before including coupled.h"
#endif

#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define TCP_ESTABLISHED 1
#define TCP_CA_Open 0
#define TCP_CA_CWR 2
#define TCP_CA_Loss 4
#define CA_EVENT_TX_START 0
#define AF_INET 2
#define AF_INET6 10

/* ---- maps shared by every algorithm (one instance per loaded algorithm) ---- */

/* Live state of every subflow that runs this CC, keyed by mpcc_priv.id.
 * Created at init, deleted at release: closed subflows leave nothing. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MPCC_MAX_SUBFLOWS_TRACKED);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct mpcc_subflow);
} subflows SEC(".maps");

/* Load-time parameters, written by the loader before attach (and readable by
 * `mptcp-cc list`). One entry; array lookups are inlined by the verifier. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mpcc_params);
} params SEC(".maps");

/* Every decision with its inputs, only while params.trace is set: the
 * differential tests replay these through the Go model. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} trace SEC(".maps");

/* Subflow ids are unique across algorithms: the algorithm sits in the top byte. */
__u64 next_id = 0;

/* ---- per-subflow private state, in icsk_ca_priv (104 bytes at most) ---- */

struct mpcc_priv {
	__u64 id;          /* key in the subflows map, 0 until init */
	__s64 acc;         /* Q32 fraction of a packet not yet added to cwnd */
	__u64 loss_mark;   /* bytes_acked at the last loss (OLIA) */
	__u64 loss_gap;    /* bytes acked between the last two losses (OLIA) */
	__s64 coupled;     /* last coupled quantity, Q32 */
	__u32 wmax;        /* largest window this subflow has had, packets */
	__u32 repairs;     /* implausible windows replaced (mpcc_guard) */
};

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline struct mpcc_priv *mpcc_ca(const struct sock *sk)
{
	return (struct mpcc_priv *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline const struct mpcc_params *mpcc_params(void)
{
	static const struct mpcc_params defaults = {};
	__u32 zero = 0;
	const struct mpcc_params *p = bpf_map_lookup_elem(&params, &zero);

	return p ? p : &defaults;
}

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

/* ---- the connection walk ---- */

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
		struct mpcc_priv sca;
		struct sock *ssk;

		ssk = mptcp_walk_next(&w, sk, &end);
		if (end)
			break;
		if (!ssk || !(sicsk = mpcc_coupled_sibling(ssk, ops)))
			continue;
		stp = bpf_rdonly_cast(ssk, bpf_core_type_id_kernel(struct tcp_sock));
		if (!stp->srtt_us || !stp->snd_cwnd)
			continue;
		if (bpf_probe_read_kernel(&sca, sizeof(sca), sicsk->icsk_ca_priv))
			continue;
		p->cwnd = stp->snd_cwnd;
		p->srtt_us = srtt_us_of(stp->srtt_us);
		p->min_rtt_us = stp->rtt_min.s[0].v;
		p->loss_bytes = inter_loss_bytes(stp->bytes_acked, sca.loss_mark, sca.loss_gap);
		n++;
	}
	c->n = n;
}

/* ---- fixed-point building blocks, mirrored in pkg/model ---- */

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

/*
 * Hooks every algorithm file implements. They are global functions on
 * purpose: the verifier then checks each once, for any c->n, instead of once
 * per path through the connection walk, which would not fit its budget.
 */
__noinline int algo_increase(const struct mpcc_conn *c, struct mpcc_out *o);
__noinline int algo_ssthresh(const struct mpcc_conn *c, struct mpcc_out *o);

/* ---- the window guard ---- */

/*
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
 * what the kernel would have set it to. Then remember the window.
 */
static __always_inline void mpcc_guard(struct sock *sk)
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
	mpcc_seen(ca, tp->snd_cwnd);
}

/* ---- observability ---- */

static __always_inline void mpcc_fill_identity(const struct sock *sk, struct mpcc_subflow *s)
{
	const struct sock_common *skc = &sk->__sk_common;
	struct mptcp_sock *msk = mptcp_msk_ro(sk);

	sk_addrs(skc, &s->family, &s->sport, &s->dport, s->saddr, s->daddr);
	if (msk) {
		struct mptcp_subflow_context *ctx = mptcp_subflow_ro(sk);

		s->flags |= MPCC_F_MPTCP;
		s->token = msk->token;
		s->local_id = ctx->local_id;
		s->remote_id = ctx->remote_id;
		if (bpf_core_field_exists(ctx->subflow_id))
			s->subflow_id = ctx->subflow_id;
		if (BPF_CORE_READ_BITFIELD(ctx, backup))
			s->flags |= MPCC_F_BACKUP;
	}
}

/* Refresh this subflow's map entry; apply window a joining sibling took (LISA). */
static __always_inline void mpcc_update(struct sock *sk, __u32 npaths)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_priv *ca = mpcc_ca(sk);
	struct mpcc_subflow *s;
	__u64 id = ca->id;
	__u32 debt;

	s = bpf_map_lookup_elem(&subflows, &id);
	if (!s)
		return;

	debt = s->lisa_debt;
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

	if (!s->token && tp->is_mptcp) {
		struct mptcp_sock *msk = mptcp_msk_ro(sk);

		if (msk)
			s->token = msk->token;
	}
	s->cwnd = tp->snd_cwnd;
	s->ssthresh = tp->snd_ssthresh;
	s->srtt_us = tp->srtt_us >> 3;
	s->rttvar_us = tp->mdev_us >> 2;
	s->min_rtt_us = tp->rtt_min.s[0].v;
	s->ca_state = BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
	s->in_flight = tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
	s->delivered = tp->delivered;
	s->lost = tp->lost;
	s->retrans = tp->total_retrans;
	s->bytes_acked = tp->bytes_acked;
	s->bytes_sent = tp->bytes_sent;
	s->pacing_rate = sk->sk_pacing_rate;
	s->coupled = ca->coupled;
	s->repairs = ca->repairs;
	if (npaths)
		s->npaths = npaths;
	s->updated_ns = bpf_ktime_get_ns();
}

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

/* ---- the tcp_congestion_ops callbacks ---- */

static __always_inline bool tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

static __always_inline bool tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	/* In slow start, grow to twice what was in flight (as the kernel does). */
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

/*
 * LISA (seed 000): a joining subflow takes half of the window of the
 * established sibling with the largest window, instead of an independent
 * slow start; the donor gives it up on its next ACK (it cannot be written from
 * here: siblings are read-only). With no donor large enough to spare an
 * initial window, the kernel's initial window (RFC 6928) stays.
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

		ssk = mptcp_walk_next(&w, sk, &end);
		if (end)
			break;
		if (!ssk || !(sicsk = mpcc_coupled_sibling(ssk, ops)))
			continue;
		stp = bpf_rdonly_cast(ssk, bpf_core_type_id_kernel(struct tcp_sock));
		if (bpf_probe_read_kernel(&sid, sizeof(sid), sicsk->icsk_ca_priv))
			continue;
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

SEC("struct_ops")
void BPF_PROG(mpcc_init, struct sock *sk)
{
	struct mpcc_priv *ca = mpcc_ca(sk);
	struct mpcc_subflow s = {};
	__u64 id;

	id = ((__u64)MPCC_ALGO << 56) | __sync_add_and_fetch(&next_id, 1);
	ca->id = id;
	ca->acc = 0;
	ca->loss_mark = 0;
	ca->loss_gap = 0;
	ca->coupled = 0;
	ca->wmax = tcp_sk(sk)->snd_cwnd;
	ca->repairs = 0;

	s.id = id;
	s.algo = MPCC_ALGO;
	mpcc_fill_identity(sk, &s);
	bpf_map_update_elem(&subflows, &id, &s, BPF_ANY);

	if (mpcc_params()->lisa)
		mpcc_lisa_join(sk);
	mpcc_seen(ca, tcp_sk(sk)->snd_cwnd);
	mpcc_update(sk, 0);
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

SEC("struct_ops")
void BPF_PROG(mpcc_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_priv *ca = mpcc_ca(sk);
	struct mpcc_conn c = {};
	struct mpcc_out o = {};
	__u32 cwnd_before, acked_in = acked;
	__s64 acc_before = ca->acc, delta;
	bool tracing;

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
	tracing = mpcc_params()->trace;
	if (tracing)
		mpcc_trace(sk, MPCC_TRACE_AVOID, acked_in, cwnd_before, acc_before,
			   tp->snd_ssthresh, &c);
	mpcc_seen(ca, tp->snd_cwnd);
	mpcc_update(sk, c.n);
	return;
out:
	mpcc_seen(ca, tp->snd_cwnd);
	mpcc_update(sk, 0);
}

SEC("struct_ops")
__u32 BPF_PROG(mpcc_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct mpcc_priv *ca = mpcc_ca(sk);
	struct mpcc_conn c = {};
	struct mpcc_out o = {};

	mpcc_guard(sk);
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
	mpcc_update(sk, c.n);
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
	 * implausible value here is the kernel's, not ours (see mpcc_guard).
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
	mpcc_update(sk, 0);
}

/* Reno's window after a loss: half, at least two packets. */
static __always_inline __u32 reno_ssthresh(const struct mpcc_conn *c)
{
	__u32 w = c->p[0].cwnd >> 1;

	return w > 2 ? w : 2;
}
