// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cawatch.bpf.c: a read-only watch on the congestion state of every TCP
 * socket (MPTCP subflows included) of one network namespace (lab/cawatch).
 *
 * It exists to pin down the ssthresh anomaly of docs/kernel-faults.md,
 * section 2: windows like 667,073,280 packets that no congestion control
 * returned. It writes nothing to the sockets and takes no part in their
 * decisions, so the same watch runs over the kernel's own congestion
 * controls, a BPF one, MPTCP subflows and plain TCP alike, and tells them
 * apart by what it sees, not by what they report.
 *
 * Four places where the kernel stores or uses ssthresh:
 *
 *   tcp_cong_state_set   (tp_btf) every CA state change; entering CWR,
 *                         Recovery or Loss comes right after the CC's
 *                         ssthresh() was stored, so its value is fresh;
 *   tcp_cwnd_reduction_tp (tp_btf) every step of proportional rate
 *                         reduction, where ssthresh * prr_delivered /
 *                         prior_cwnd becomes the window;
 *   tcp_probe            (tp_btf) every segment an established socket
 *                         receives, the ACK clock: any state, any time;
 *   tcp_undo_cwnd_reduction (fentry, optional) an undo, which copies
 *                         prior_ssthresh back into ssthresh.
 *
 * A value is implausible above `limit` packets (TCP_INFINITE_SSTHRESH is
 * the kernel's "none yet", not implausible). Each socket reports a
 * sighting when its implausible values change, with its own address, its
 * subflow context's and its MPTCP socket's, so user space can tell
 * whether a value is the low half of a kernel pointer near them.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "mptcp.h"

char _license[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader: the network namespace watched (its inode number; 0
 * watches every namespace) and the largest plausible window, in packets. */
volatile const __u32 netns_ino = 0;
volatile const __u32 limit = 1 << 20;

#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define CA_STATES 5 /* Open, Disorder, CWR, Recovery, Loss */

enum cawatch_hook {
	CAWATCH_STATE,
	CAWATCH_PRR,
	CAWATCH_PROBE,
	CAWATCH_UNDO,
	CAWATCH_HOOKS,
};

/* One sighting: a socket whose implausible values changed. */
struct cawatch_sighting {
	__u64 at_ns; /* bpf_ktime_get_ns */
	__u64 sk;    /* the socket's address */
	__u64 ctx;   /* its MPTCP subflow context's, 0 for plain TCP */
	__u64 msk;   /* its MPTCP socket's, 0 for plain TCP */
	__u32 hook;  /* enum cawatch_hook */
	__u32 ca_state;
	__u32 new_state; /* tcp_cong_state_set: the state entered */
	__u32 cwnd;
	__u32 ssthresh;
	__u32 prior_ssthresh;
	__u32 prior_cwnd;
	__u32 prr_delivered;
	__u32 prr_out;
	__u32 mptcp;
	/* Where the value was before, as this watch last read it: ssthresh at
	 * the socket's last CA state change, and at the start of its last PRR
	 * step with prr_delivered then (before that step added to it). */
	__u32 state_ssthresh;
	__u32 prr_ssthresh;
	__u32 prr_step;
	__u32 pad;
	char cc[16]; /* the socket's congestion control */
};

/* Totals, per CPU: user space sums them. */
struct cawatch_counts {
	__u64 calls[CAWATCH_HOOKS];       /* hook runs on watched sockets */
	__u64 implausible[CAWATCH_HOOKS]; /* of them, with an implausible value */
	__u64 entered[CA_STATES];         /* state changes into each CA state */
	__u64 lost;                       /* sightings the ring buffer had no room for */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cawatch_counts);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} sightings SEC(".maps");

/* Per watched socket: what it reported last (a value that stays
 * implausible is reported once, a new one again), and ssthresh as read at
 * its last state change and PRR step, for the next sighting to carry. */
struct cawatch_seen {
	__u32 cwnd, ssthresh, prior_ssthresh, prior_cwnd;
	__u32 state_ssthresh, prr_ssthresh, prr_step, pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct cawatch_seen);
} seen SEC(".maps");

/* Named for bpf2go, which generates the Go mirror of each (lab/cawatch). */
const struct cawatch_sighting *unused_sighting __attribute__((unused));

static __always_inline bool too_big(__u32 w)
{
	return w > limit && w != TCP_INFINITE_SSTHRESH;
}

static __always_inline struct cawatch_counts *totals(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counts, &zero);
}

static __always_inline void check(struct sock *sk, enum cawatch_hook hook, __u32 new_state)
{
	struct cawatch_counts *n = totals();
	struct cawatch_seen now = {}, before, *last;
	struct cawatch_sighting *s;
	struct tcp_sock *tp;
	__u64 key;

	if (!n || hook >= CAWATCH_HOOKS)
		return;
	if (netns_ino && sk->__sk_common.skc_net.net->ns.inum != netns_ino)
		return;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return;
	n->calls[hook]++;
	if (hook == CAWATCH_STATE) {
		__u32 i = new_state;

		barrier_var(i); /* the bound below must hold for the index used */
		if (i < CA_STATES)
			n->entered[i]++;
	}

	now.cwnd = tp->snd_cwnd;
	now.ssthresh = tp->snd_ssthresh;
	now.prior_ssthresh = tp->prior_ssthresh;
	now.prior_cwnd = tp->prior_cwnd;

	key = (__u64)tp;
	last = bpf_map_lookup_elem(&seen, &key);
	if (!last) {
		bpf_map_update_elem(&seen, &key, &now, BPF_NOEXIST);
		last = bpf_map_lookup_elem(&seen, &key);
		if (!last)
			return;
		last->cwnd = last->ssthresh = last->prior_ssthresh = last->prior_cwnd = 0;
	}
	/* What the sighting carries is what was read before this call. */
	before = *last;
	if (hook == CAWATCH_STATE)
		last->state_ssthresh = now.ssthresh;
	if (hook == CAWATCH_PRR) {
		last->prr_ssthresh = now.ssthresh;
		last->prr_step = tp->prr_delivered;
	}

	if (!too_big(now.cwnd) && !too_big(now.ssthresh) && !too_big(now.prior_ssthresh) &&
	    !too_big(now.prior_cwnd))
		return;
	n->implausible[hook]++;
	if (before.cwnd == now.cwnd && before.ssthresh == now.ssthresh &&
	    before.prior_ssthresh == now.prior_ssthresh && before.prior_cwnd == now.prior_cwnd)
		return;
	last->cwnd = now.cwnd;
	last->ssthresh = now.ssthresh;
	last->prior_ssthresh = now.prior_ssthresh;
	last->prior_cwnd = now.prior_cwnd;

	s = bpf_ringbuf_reserve(&sightings, sizeof(*s), 0);
	if (!s) {
		n->lost++;
		return;
	}
	s->at_ns = bpf_ktime_get_ns();
	s->sk = (__u64)tp;
	s->ctx = 0;
	s->msk = 0;
	s->mptcp = tp->is_mptcp;
	if (tp->is_mptcp) {
		struct mptcp_subflow_context *ctx = mptcp_subflow_ro((struct sock *)tp);

		s->ctx = (__u64)ctx;
		if (ctx)
			s->msk = (__u64)ctx->conn;
	}
	s->hook = hook;
	s->ca_state = BPF_CORE_READ_BITFIELD(&tp->inet_conn, icsk_ca_state);
	s->new_state = new_state;
	s->cwnd = now.cwnd;
	s->ssthresh = now.ssthresh;
	s->prior_ssthresh = now.prior_ssthresh;
	s->prior_cwnd = now.prior_cwnd;
	s->prr_delivered = tp->prr_delivered;
	s->prr_out = tp->prr_out;
	s->state_ssthresh = before.state_ssthresh;
	s->prr_ssthresh = before.prr_ssthresh;
	s->prr_step = before.prr_step;
	s->pad = 0;
	bpf_probe_read_kernel_str(s->cc, sizeof(s->cc), tp->inet_conn.icsk_ca_ops->name);
	bpf_ringbuf_submit(s, 0);
}

SEC("tp_btf/tcp_cong_state_set")
int BPF_PROG(cawatch_state, struct sock *sk, const __u8 ca_state)
{
	check(sk, CAWATCH_STATE, ca_state);
	return 0;
}

SEC("tp_btf/tcp_cwnd_reduction_tp")
int BPF_PROG(cawatch_prr, struct sock *sk, int newly_acked_sacked, int newly_lost, int flag)
{
	check(sk, CAWATCH_PRR, 0);
	return 0;
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(cawatch_probe, struct sock *sk, const struct sk_buff *skb)
{
	check(sk, CAWATCH_PROBE, 0);
	return 0;
}

SEC("fentry/tcp_undo_cwnd_reduction")
int BPF_PROG(cawatch_undo, struct sock *sk, bool unmark_loss)
{
	check(sk, CAWATCH_UNDO, 0);
	return 0;
}
