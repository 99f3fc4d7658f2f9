/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cc_priv.h: the state a coupled congestion control keeps per subflow, in
 * the socket itself (icsk_ca_priv, 104 bytes at most), and the casts that
 * reach it. Its own subflow writes it; siblings read single words of it
 * (MPCC_PRIV_WORD) through the connection walk (cc_conn.h, cc_lisa.h),
 * which is why the fields they read are u64. Included by the cc_*.h
 * headers.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

struct mpcc_priv {
	/* Written by the subflow's own callbacks on its ACKs. */
	__s64 acc;         /* Q32 fraction of a packet not yet added to cwnd */
	__s64 coupled;     /* last coupled quantity, Q32 */
	__u32 wmax;        /* largest window this subflow has had, packets */
	__u32 repairs;     /* implausible windows replaced (cc_guard.h) */
	/* When the subflows map record was refreshed and the path count it
	 * shows, so that cong_avoid refreshes it only once it has aged
	 * (cc_obs.h, mpcc_refresh). */
	__u64 shown_us;    /* tp->tcp_mstamp at the last refresh, us */
	__u32 shown_npaths;
	/* params.lisa as of the last refresh: cong_avoid reads it on every
	 * ACK, and the params map's line is rarely in cache by then (on the
	 * goodput bench, that one read was about a third of the callback's
	 * time). An update in place reaches the subflow with its record's
	 * next refresh, within MPCC_REFRESH_US of its ACKs. */
	__u32 lisa;
	/* Siblings read the words below on every one of their ACKs (OLIA's
	 * l_r; LISA's donor id), from another CPU. They are written only at
	 * init and on a loss, and kept 48 bytes in, apart from the words
	 * written on every ACK: on Linux 6.18 icsk_ca_priv starts 16 bytes
	 * into a cache line, so they sit on the next line and a sibling's
	 * read does not pull the line this subflow writes on every ACK. */
	__u32 unused[2];
	__u64 id;          /* key in the subflows map, 0 until init */
	__u64 loss_mark;   /* bytes_acked at the last loss (OLIA) */
	__u64 loss_gap;    /* bytes acked between the last two losses (OLIA) */
};

/* The index in icsk_ca_priv (an array of u64) of a u64 field of
 * mpcc_priv, for a sibling's field read through a rdonly cast of its
 * socket. */
#define MPCC_PRIV_WORD(field) (__builtin_offsetof(struct mpcc_priv, field) / sizeof(__u64))
_Static_assert(sizeof(struct mpcc_priv) <= sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv),
	       "mpcc_priv must fit in icsk_ca_priv");
/* The words siblings read must start on a word, or MPCC_PRIV_WORD would
 * round down to the wrong one. */
_Static_assert(__builtin_offsetof(struct mpcc_priv, id) == 48, "the words siblings read start 48 bytes in");
_Static_assert(__builtin_offsetof(struct mpcc_priv, id) % sizeof(__u64) == 0 &&
		       __builtin_offsetof(struct mpcc_priv, loss_mark) % sizeof(__u64) == 0 &&
		       __builtin_offsetof(struct mpcc_priv, loss_gap) % sizeof(__u64) == 0,
	       "fields read through MPCC_PRIV_WORD must be word-aligned");

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
