/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cc_priv.h: the state a coupled congestion control keeps per subflow, in
 * the socket itself (icsk_ca_priv, 104 bytes at most), and the casts that
 * reach it. Its own subflow writes it; siblings read it through the
 * connection walk (cc_conn.h, cc_lisa.h), which is why `id` comes first:
 * LISA reads only that word. Included by the cc_*.h headers.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

struct mpcc_priv {
	__u64 id;          /* key in the subflows map, 0 until init */
	__s64 acc;         /* Q32 fraction of a packet not yet added to cwnd */
	__u64 loss_mark;   /* bytes_acked at the last loss (OLIA) */
	__u64 loss_gap;    /* bytes acked between the last two losses (OLIA) */
	__s64 coupled;     /* last coupled quantity, Q32 */
	__u32 wmax;        /* largest window this subflow has had, packets */
	__u32 repairs;     /* implausible windows replaced (cc_guard.h) */
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
