// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * setcc.bpf.c: switch the congestion control of a live MPTCP connection
 * (pkg/connctl, `mptcp-cc set --token`).
 *
 * An iter/tcp program: reading the iterator walks every TCP socket of the
 * reader's network namespace, with each full socket locked. The subflows of
 * the connection whose token is target_token get target_cc through
 * bpf_setsockopt(TCP_CONGESTION), which releases the old CC and inits the new
 * one on the spot; the new CC starts from the subflow's current window. One
 * record per subflow found is written to the iterator's output.
 *
 * The token is the one of the reading side's MPTCP socket (msk->token, what
 * `ss -M` and `mptcp-cc subflows` show): the two ends of a connection have
 * different tokens.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char _license[] SEC("license") = "Dual BSD/GPL";

#define AF_INET6 10
#define SOL_TCP 6
#define TCP_CONGESTION 13
#define CC_NAME_MAX 16
#define TCP_CLOSE 7
#define TCP_LISTEN 10

#include "mptcp.h"


/* Set by the loader before the program is loaded. */
volatile const __u32 target_token = 0;
volatile const char target_cc[CC_NAME_MAX] = {};

/* One subflow found. Addresses in network order, ports in host order. */
struct setcc_record {
	__u16 family;
	__u16 sport;
	__u16 dport;
	__u16 state;
	__u8 saddr[16];
	__u8 daddr[16];
	char from[CC_NAME_MAX]; /* the CC it ran before */
	__s32 err;              /* bpf_setsockopt's result */
	__u32 subflow_id;
};

/* Keeps struct setcc_record in the object's BTF, for bpf2go's Go type. */
const struct setcc_record *setcc_record_type __attribute__((unused));

SEC("iter/tcp")
int mptcp_cc_setcc(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct seq_file *seq = ctx->meta->seq;
	struct mptcp_subflow_context *sf;
	struct setcc_record rec = {};
	const struct sock *sk;
	char want[CC_NAME_MAX] = {};
	struct mptcp_sock *msk;
	struct tcp_sock *tp;
	int i;

	if (!skc)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp || !tp->is_mptcp)
		return 0;
	rec.state = tp->inet_conn.icsk_inet.sk.__sk_common.skc_state;
	if (rec.state == TCP_LISTEN || rec.state == TCP_CLOSE)
		return 0;
	sk = (const struct sock *)tp;
	sf = mptcp_subflow_ro(sk);
	msk = mptcp_msk_ro(sk);
	if (!sf || !msk || msk->token != target_token)
		return 0;

	sk_addrs(skc, &rec.family, &rec.sport, &rec.dport, rec.saddr, rec.daddr);
	if (bpf_core_field_exists(sf->subflow_id))
		rec.subflow_id = sf->subflow_id;

	for (i = 0; i < CC_NAME_MAX; i++)
		want[i] = target_cc[i];
	want[CC_NAME_MAX - 1] = 0;
	bpf_getsockopt(tp, SOL_TCP, TCP_CONGESTION, rec.from, sizeof(rec.from));
	rec.err = bpf_setsockopt(tp, SOL_TCP, TCP_CONGESTION, want, sizeof(want));
	bpf_seq_write(seq, &rec, sizeof(rec));
	return 0;
}
