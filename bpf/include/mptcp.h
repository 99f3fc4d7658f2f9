/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mptcp.h: reaching an MPTCP connection from one of its subflows, walking
 * its subflows read-only, and naming a subflow by its addresses. Shared by
 * every program that needs it (the congestion controls through cc_conn.h,
 * policy.bpf.c, setcc.bpf.c); nothing in it is about congestion control, so
 * a scheduler can walk its subflows with it too.
 *
 * Upstream gives programs outside the MPTCP scheduler hook no trusted way
 * to the parent socket, but the subflow context (icsk_ulp_data) and its
 * `conn` can be read through bpf_rdonly_cast. Those reads cannot fault; the
 * walk takes no lock, so a list changing under it is cut short by the bound
 * and can only yield a stale or skipped sibling.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

#define MPTCP_WALK_MAX 16 /* list nodes visited per walk */

#ifndef AF_INET6
#define AF_INET6 10
#endif

static __always_inline struct mptcp_subflow_context *mptcp_subflow_ro(const struct sock *ssk)
{
	const struct inet_connection_sock *icsk = (const struct inet_connection_sock *)ssk;

	return bpf_rdonly_cast(icsk->icsk_ulp_data,
			       bpf_core_type_id_kernel(struct mptcp_subflow_context));
}

/* The MPTCP socket a subflow belongs to, or NULL for plain TCP. */
static __always_inline struct mptcp_sock *mptcp_msk_ro(const struct sock *ssk)
{
	struct mptcp_subflow_context *ctx;

	if (!((const struct tcp_sock *)ssk)->is_mptcp)
		return NULL;
	ctx = mptcp_subflow_ro(ssk);
	if (!ctx)
		return NULL;
	return bpf_rdonly_cast(ctx->conn, bpf_core_type_id_kernel(struct mptcp_sock));
}

/*
 * mptcp_subflow_context.local_id changed type: u8 in Linux as released up
 * to 6.5, s16 ("if negative not initialized yet") in 6.8 on, and in stable
 * kernels that took the change (Debian 12's 6.1.0-57, 6.1.192, has s16:
 * measured in its BTF). cilium/ebpf relocates a field's offset but not the
 * size of the load, so the s16 read of vmlinux.h is a 2-byte load that the
 * verifier rejects on a u8 field ("access beyond the end of member
 * local_id", seen on 6.2). mptcp_local_id reads it with the size the
 * running kernel declares: the branch is a CO-RE constant, so the verifier
 * never sees the other arm. It returns the id as the kernel holds it: 0-255
 * once set, negative (s16 kernels only) before the path manager set it.
 * Every program that reads the field reads it here (cc_obs.h for the
 * subflow record, sched_skel.h for a subflow's endpoint).
 */
struct mptcp_subflow_context___old {
	__u8 local_id;
} __attribute__((preserve_access_index));

static __always_inline int mptcp_local_id(const struct mptcp_subflow_context *ctx)
{
	if (bpf_core_field_size(ctx->local_id) == 1)
		return ((const struct mptcp_subflow_context___old *)ctx)->local_id;
	return (__s16)ctx->local_id;
}

/* A walk over msk->conn_list: start it, then call mptcp_walk_next at most
 * MPTCP_WALK_MAX times in a bounded loop. */
struct mptcp_walk {
	struct list_head *head, *pos;
};

static __always_inline void mptcp_walk_start(struct mptcp_walk *w, struct mptcp_sock *msk)
{
	w->head = &msk->conn_list;
	w->pos = w->head->next;
}

/* The next subflow socket other than `self`, read-only; NULL for a node to
 * skip. *end is set when the list is done. */
static __always_inline struct sock *mptcp_walk_next(struct mptcp_walk *w, const struct sock *self,
						    bool *end)
{
	struct mptcp_subflow_context *ctx;
	struct sock *ssk;

	if (!w->pos || (__u64)w->pos == (__u64)w->head) {
		*end = true;
		return NULL;
	}
	/* node is the first member of the subflow context */
	ctx = bpf_rdonly_cast(w->pos, bpf_core_type_id_kernel(struct mptcp_subflow_context));
	ssk = ctx->tcp_sock;
	w->pos = w->pos->next;
	if (!ssk || (__u64)ssk == (__u64)self)
		return NULL;
	return ssk;
}

/* A socket's family, ports (host order) and addresses (network order; IPv4
 * in the first 4 bytes). */
static __always_inline void sk_addrs(const struct sock_common *skc, __u16 *family, __u16 *sport,
				     __u16 *dport, __u8 saddr[16], __u8 daddr[16])
{
	*family = skc->skc_family;
	*sport = skc->skc_num;
	*dport = bpf_ntohs(skc->skc_dport);
	if (*family == AF_INET6) {
		BPF_CORE_READ_INTO((__u8(*)[16])saddr, skc, skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO((__u8(*)[16])daddr, skc, skc_v6_daddr.in6_u.u6_addr8);
	} else {
		__builtin_memcpy(saddr, &skc->skc_rcv_saddr, 4);
		__builtin_memcpy(daddr, &skc->skc_daddr, 4);
	}
}
