/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sched_skel.h: the skeleton every packet scheduler in bpf/sched/ is built
 * on. An algorithm file includes this
 * header and implements
 *
 *   algo_send(c, s, o)     where new data goes: o->mask, o->burst;
 *   algo_retrans(c, s, o)  where a reinjection goes (SCHED_RETRANS_ON_BEST()
 *                          when it is the lowest-RTT usable subflow);
 *
 * and ends with SCHED_STRUCT_OPS(sym, "name"). The hooks see only the
 * snapshot in struct mpsch_conn and the algorithm's own words (struct
 * mpsch_state), so the Go models (pkg/schedmodel) can replay them. Everything
 * else - walking the subflows, marking the chosen ones, setting the burst,
 * the stats map and the trace - is done here, once.
 *
 * Where the per-connection data lives: in socket-local storage on the MPTCP
 * socket. The kernel calls get_send/get_retrans with that socket locked, so
 * one decision at a time touches it, and the snapshot (about 1 KiB, twice
 * the BPF stack) is built in place there.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "mptcp.h"
#include "sched_api.h"
#include "sched_types.h"

char _license[] SEC("license") = "Dual BSD/GPL";

/* The scheduler's id, set by the loader from the table in pkg/algo (which
 * refuses an object without it); Go writes the same id to
 * mpsch_params.algo for `mptcp-cc sched list`. */
const volatile __u32 mpsch_algo_id = 0;

/* The kernel's cap on one push (MPTCP_SEND_BURST_SIZE in net/mptcp/protocol.c). */
#define SCHED_BURST_MAX 65428

/* ---- maps: what pkg/sched pins beside the struct_ops link ---- */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mpsch_params);
} params SEC(".maps");

/* Every decision with its inputs, while params.trace is set. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} trace SEC(".maps");

/* What each subflow was given. LRU: closed connections age out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SCHED_MAX_TRACKED);
	__type(key, __u64);
	__type(value, struct mpsch_sf_stats);
} stats SEC(".maps");

/* Per connection: the algorithm's state and the decision being made. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mpsch_trace);
} conns SEC(".maps");

static __always_inline const struct mpsch_params *sched_params(void)
{
	static const struct mpsch_params defaults = {};
	__u32 zero = 0;
	const struct mpsch_params *p = bpf_map_lookup_elem(&params, &zero);

	return p ? p : &defaults;
}

/* The algorithm's tunable i, or def when the loader left it 0. */
static __always_inline __u32 sched_arg(const struct mpsch_params *p, int i, __u32 def)
{
	__u32 v = i >= 0 && i < 6 ? p->arg[i] : 0;

	return v ? v : def;
}

__noinline int algo_send(const struct mpsch_conn *c, struct mpsch_state *s, struct mpsch_out *o);
__noinline int algo_retrans(const struct mpsch_conn *c, struct mpsch_state *s, struct mpsch_out *o);

/* ---- the snapshot ---- */

static __always_inline void sched_fill(struct mptcp_subflow_context *sf, struct mpsch_sf *f)
{
	struct sock *ssk = bpf_mptcp_subflow_tcp_sock(sf);
	struct tcp_sock *tp;

	__builtin_memset(f, 0, sizeof(*f));
	f->id = sf->subflow_id;
	if (BPF_CORE_READ_BITFIELD(sf, backup))
		f->flags |= SCHED_SF_BACKUP;
	if (mptcp_subflow_active(sf))
		f->flags |= SCHED_SF_ACTIVE;
	if (bpf_sk_stream_memory_free(sf))
		f->flags |= SCHED_SF_MEMFREE;
	if (!ssk)
		return;
	tp = bpf_skc_to_tcp_sock(ssk);
	if (!tp)
		return;
	f->srtt_us = tp->srtt_us >> 3;
	f->rttvar_us = tp->mdev_us >> 2;
	f->cwnd = tp->snd_cwnd;
	f->ssthresh = tp->snd_ssthresh;
	f->inflight = tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
	f->mss = tp->mss_cache;
	f->notsent = tp->write_seq - tp->snd_nxt;
	f->rate_delivered = tp->rate_delivered;
	f->rate_interval_us = tp->rate_interval_us;
	f->pacing_rate = ssk->sk_pacing_rate;
	f->delivered = tp->delivered;
	f->bytes_acked = tp->bytes_acked;
	if (f->cwnd < f->ssthresh)
		f->flags |= SCHED_SF_SS;
}

/* The endpoint a subflow's local address came from: its local id, except
 * for the initial subflow, which the kernel gives local id 0 whatever its
 * address and whose endpoint (if its address is one) it keeps in
 * msk->mpc_endpoint_id. So an operator's endpoint id names the same path
 * whether or not the connection started on it. 0: no endpoint (-1 is a
 * local id not assigned yet). The id is read size-aware (mptcp.h). */
static __always_inline __u32 sched_endpoint(const struct mptcp_sock *msk,
					    const struct mptcp_subflow_context *sf)
{
	int id = mptcp_local_id(sf);

	if (id > 0)
		return id;
	if (id == 0 && bpf_core_field_exists(msk->mpc_endpoint_id))
		return msk->mpc_endpoint_id;
	return 0;
}

static __always_inline void sched_collect(struct mptcp_sock *msk, struct mpsch_conn *c, __u32 retrans)
{
	struct mptcp_subflow_context *sf;
	__u32 n = 0;

	c->now_us = bpf_ktime_get_ns() / 1000;
	c->snd_una = msk->snd_una;
	c->snd_nxt = msk->snd_nxt;
	c->write_seq = msk->write_seq;
	c->wnd_end = mptcp_wnd_end(msk);
	c->retrans = retrans;
	sched_for_each_subflow(sf, msk) {
		if (n >= SCHED_MAX_SUBFLOWS)
			break;
		sched_fill(sf, &c->sf[n]);
		c->sf[n].endpoint = sched_endpoint(msk, sf);
		n++;
	}
	c->n = n;
}

/* ---- applying the answer ---- */

static __always_inline void sched_count(struct mptcp_sock *msk, struct mptcp_subflow_context *sf,
					const struct mpsch_sf *f, __u64 now_us, __u32 retrans, __u32 burst)
{
	__u64 key = (__u64)msk->token << 32 | f->id;
	struct mpsch_sf_stats *st = bpf_map_lookup_elem(&stats, &key);

	if (!st) {
		struct mpsch_sf_stats fresh = { .token = msk->token, .id = f->id };
		struct sock *ssk = bpf_mptcp_subflow_tcp_sock(sf);

		if (ssk)
			sk_addrs(&ssk->__sk_common, &fresh.family, &fresh.sport, &fresh.dport,
				 fresh.saddr, fresh.daddr);
		bpf_map_update_elem(&stats, &key, &fresh, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&stats, &key);
		if (!st)
			return;
	}
	if (retrans)
		__sync_fetch_and_add(&st->retrans, 1);
	else
		__sync_fetch_and_add(&st->sends, 1);
	__sync_fetch_and_add(&st->burst_bytes, burst);
	st->last_us = now_us;
}

static __always_inline int sched_decide(struct mptcp_sock *msk, __u32 retrans)
{
	const struct mpsch_params *p = sched_params();
	struct mptcp_subflow_context *sf;
	struct mpsch_trace *t;
	__u32 i = 0, mask;
	int ret;

	t = bpf_sk_storage_get(&conns, msk, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return -1; /* no memory: nothing scheduled, the kernel retries */
	sched_collect(msk, &t->conn, retrans);
	__builtin_memcpy(&t->before, &t->after, sizeof(t->before));
	t->out.mask = 0;
	t->out.burst = 0;
	if (retrans)
		ret = algo_retrans(&t->conn, &t->after, &t->out);
	else
		ret = algo_send(&t->conn, &t->after, &t->out);

	mask = t->out.mask & ((1u << t->conn.n) - 1);
	if (!mask)
		ret = -1;
	if (mask) {
		sched_for_each_subflow(sf, msk) {
			if (i >= SCHED_MAX_SUBFLOWS)
				break;
			if (mask & (1u << i)) {
				mptcp_subflow_set_scheduled(sf, true);
				sched_count(msk, sf, &t->conn.sf[i], t->conn.now_us, retrans, t->out.burst);
			}
			i++;
		}
		if (t->out.burst && !retrans)
			msk->snd_burst = t->out.burst > SCHED_BURST_MAX ? SCHED_BURST_MAX : t->out.burst;
	}
	if (p->trace) {
		t->token = msk->token;
		t->ret = ret;
		bpf_ringbuf_output(&trace, t, sizeof(*t), 0);
	}
	return ret;
}

SEC("struct_ops")
int BPF_PROG(sched_get_send, struct mptcp_sock *msk)
{
	return sched_decide(msk, 0);
}

SEC("struct_ops")
int BPF_PROG(sched_get_retrans, struct mptcp_sock *msk)
{
	return sched_decide(msk, 1);
}

SEC("struct_ops")
void BPF_PROG(sched_init, struct mptcp_sock *msk)
{
}

SEC("struct_ops")
void BPF_PROG(sched_release, struct mptcp_sock *msk)
{
	bpf_sk_storage_delete(&conns, msk);
}

/* The struct_ops map of scheduler `sym`, registered as `sched_name` (what
 * net.mptcp.scheduler names). */
#define SCHED_STRUCT_OPS(sym, sched_name)                     \
	SEC(".struct_ops.link")                               \
	struct mptcp_sched_ops sym = {                        \
		.init = (void *)sched_init,                   \
		.release = (void *)sched_release,             \
		.get_send = (void *)sched_get_send,           \
		.get_retrans = (void *)sched_get_retrans,     \
		.name = sched_name,                           \
	}
