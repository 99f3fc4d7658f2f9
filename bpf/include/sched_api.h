/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sched_api.h: the BPF packet-scheduler hook as mptcp_net-next's `export`
 * branch offers it (struct_ops mptcp_sched_ops, registered by
 * net/mptcp/bpf.c there; no released kernel has it, see docs/schedulers.md).
 *
 * The objects are built against this machine's vmlinux.h, which has the
 * scheduler types (struct mptcp_sched_ops, mptcp_sock, the subflow context)
 * but not the hook's kfuncs and iterator: they are declared here, and CO-RE
 * resolves field offsets on whichever kernel loads the object. The kfuncs
 * are strong (not __weak): on a kernel without them the load fails, and
 * pkg/sched checks for the hook before it tries.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

/* The open-coded subflow iterator (KF_ITER_NEW/NEXT/DESTROY). The verifier
 * knows it by name and size, so it must be exactly this. */
struct bpf_iter_mptcp_subflow {
	__u64 __opaque[2];
} __attribute__((aligned(8)));

extern int bpf_iter_mptcp_subflow_new(struct bpf_iter_mptcp_subflow *it, struct sock *sk) __ksym;
extern struct mptcp_subflow_context *bpf_iter_mptcp_subflow_next(struct bpf_iter_mptcp_subflow *it) __ksym;
extern void bpf_iter_mptcp_subflow_destroy(struct bpf_iter_mptcp_subflow *it) __ksym;

extern struct sock *bpf_mptcp_subflow_tcp_sock(const struct mptcp_subflow_context *subflow) __ksym;
extern void mptcp_subflow_set_scheduled(struct mptcp_subflow_context *subflow, bool scheduled) __ksym;
extern bool mptcp_subflow_active(struct mptcp_subflow_context *subflow) __ksym;
extern __u64 mptcp_wnd_end(const struct mptcp_sock *msk) __ksym;
extern bool bpf_sk_stream_memory_free(const struct mptcp_subflow_context *subflow) __ksym;

/* for (each subflow of msk) with the iterator: `sf` is a trusted pointer
 * the kfuncs accept (msk->first is not: the 7.3 verifier rejects it).
 * libbpf's bpf_for_each does the same; Debian 12's libbpf predates it. */
#define sched_for_each_subflow(sf, msk)                                                          \
	for (struct bpf_iter_mptcp_subflow ___it                                                   \
		     __attribute__((aligned(8), cleanup(bpf_iter_mptcp_subflow_destroy))),          \
	     *___once __attribute__((unused)) =                                                    \
		     (bpf_iter_mptcp_subflow_new(&___it, (struct sock *)(msk)), (void *)0);         \
	     ((sf) = bpf_iter_mptcp_subflow_next(&___it));)
