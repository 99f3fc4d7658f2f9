// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ackwatch.bpf.c: a read-only watch on a receiver's ACK decisions, per
 * kind of socket (plain TCP, MPTCP subflow), in one network namespace
 * (lab/ackwatch).
 *
 * It exists for docs/kernel-faults.md section 3: a receiver holds the
 * ACKs of one MPTCP connection's subflows for its delayed-ACK timer about
 * twice as often as a plain TCP flow's. Which test postponed those ACKs,
 * and which path failed to send them before the timer did?
 *
 * __tcp_ack_snd_check (tcp_input.c, inlined) sends an ACK at once when
 * more than one full segment is unacknowledged and the window would not
 * shrink (__tcp_select_window(sk) >= tp->rcv_wnd), and otherwise arms the
 * timer through tcp_send_delayed_ack, trusting the reader (tcp_recvmsg ->
 * tcp_cleanup_rbuf) to send the ACK once it has made room. So:
 *
 *   fexit  __tcp_select_window   the window just computed, per CPU, so
 *                                 the next hook can see the test's result;
 *   fentry tcp_send_delayed_ack  why this ACK waits: one segment only
 *                                 (the ordinary every-other ACK), the
 *                                 window test (with the socket's rcv_wnd
 *                                 above its own rcv_ssthresh or not: an
 *                                 MPTCP subflow's rcv_wnd is raised to the
 *                                 connection's, mptcp_set_rwin), or else;
 *   fentry/fexit tcp_delack_timer_handler, tcp_cleanup_rbuf
 *                                 who sends the pending ACK: the timer or
 *                                 the reader;
 *   fentry mptcp_cleanup_rbuf    MPTCP's reader: for each subflow with an
 *                                 ACK waiting on one segment, which of
 *                                 the conditions to send it fails (the
 *                                 same for plain TCP in tcp_cleanup_rbuf);
 *   fentry tcp_send_ack          every pure ACK, credited to the path it
 *                                 was sent from (the kernels' compilers
 *                                 split __tcp_send_ack, so its entry does
 *                                 not see the calls).
 *
 * Every hook runs for every socket of the machine while the watch is on,
 * so each tests the namespace first and touches no map for the others.
 *
 * Every one of these is a global or BTF-visible function on the kernels
 * tried (6.18, 7.3.4); fentry needs a kernel not in lockdown.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "mptcp.h"

char _license[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader: the network namespace watched (its inode number). */
volatile const __u32 netns_ino = 0;

/* include/net/inet_connection_sock.h, enum inet_csk_ack_state_t */
#define ICSK_ACK_TIMER 2
#define ICSK_ACK_PUSHED 4
#define ICSK_ACK_PUSHED2 8

/* Why an ACK was left to the timer (the last decision before it went). */
enum ackwatch_why {
	WHY_ONE_SEGMENT, /* at most one full segment unacknowledged */
	WHY_WINDOW,      /* the window test failed, rcv_wnd within rcv_ssthresh */
	WHY_RAISED,      /* the window test failed, rcv_wnd above rcv_ssthresh */
	WHY_OTHER,       /* more than a segment and no window result seen */
	WHYS,
};

/* A reader's clean-up that found an ACK waiting with one segment held:
 * the every-other rule postponed it, and only the reader's "pushed and
 * everything read" rule can send it before the timer. The first of its
 * conditions that fails (plain TCP, __tcp_cleanup_rbuf: copied > 0, a
 * PUSHED flag, the socket's receive memory empty; an MPTCP subflow,
 * mptcp_cleanup_rbuf -> mptcp_subflow_could_cleanup: the same, with the
 * receive memory of the whole connection). */
enum ackwatch_gate {
	GATE_OPEN,       /* every condition holds: the reader sends it */
	GATE_NOT_COPIED, /* the reader copied nothing this time */
	GATE_NOT_PUSHED, /* no PUSHED flag on the socket */
	GATE_RMEM,       /* receive memory not empty (the connection's, for a subflow) */
	GATES,
};

enum ackwatch_kind {
	KIND_TCP,
	KIND_SUBFLOW,
	KINDS,
};

/* Totals per kind of socket, per CPU: user space sums them. */
struct ackwatch_counts {
	__u64 acks;              /* every pure ACK (tcp_send_ack) */
	__u64 delayed[WHYS];     /* tcp_send_delayed_ack calls, by why */
	__u64 by_timer[WHYS];    /* ACKs the delayed-ACK timer sent, by why they waited */
	__u64 by_reader;         /* ACKs tcp_cleanup_rbuf sent */
	__u64 reader_calls;      /* tcp_cleanup_rbuf calls */
	__u64 reader_pending;    /* of them, with the timer armed */
	__u64 short_bytes;       /* WHY_WINDOW and WHY_RAISED: rcv_wnd - new window, summed */
	__u64 gate[GATES];       /* readers that found a one-segment ACK waiting, by gate */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KINDS);
	__type(key, __u32);
	__type(value, struct ackwatch_counts);
} counts SEC(".maps");

/* Per CPU: the socket a path is running for, so __tcp_send_ack and
 * tcp_send_delayed_ack can tell where they were called from. */
struct ackwatch_cpu {
	__u64 timer_sk;  /* inside tcp_delack_timer_handler */
	__u64 reader_sk; /* inside tcp_cleanup_rbuf */
	__u64 window_sk; /* __tcp_select_window's last socket */
	__u32 window;    /* and what it returned */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ackwatch_cpu);
} cpu SEC(".maps");

/* Per socket: why its pending ACK last waited. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u32);
} why SEC(".maps");

/* Named for bpf2go, which generates the Go mirror (lab/ackwatch). */
const struct ackwatch_counts *unused_counts __attribute__((unused));

static __always_inline bool watched(struct sock *sk)
{
	return sk->__sk_common.skc_net.net->ns.inum == netns_ino;
}

static __always_inline struct ackwatch_counts *totals(struct tcp_sock *tp)
{
	__u32 kind = tp->is_mptcp ? KIND_SUBFLOW : KIND_TCP;

	return bpf_map_lookup_elem(&counts, &kind);
}

/* The totals of a watched TCP socket's kind, and the socket as a
 * tcp_sock; NULL for a socket outside the namespace. */
static __always_inline struct ackwatch_counts *watched_tcp(struct sock *sk, struct tcp_sock **tpp)
{
	struct tcp_sock *tp;

	if (!watched(sk))
		return NULL;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return NULL;
	*tpp = tp;
	return totals(tp);
}

static __always_inline struct ackwatch_cpu *this_cpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cpu, &zero);
}

static __always_inline bool timer_armed(struct tcp_sock *tp)
{
	return tp->inet_conn.icsk_ack.pending & ICSK_ACK_TIMER;
}

/* A reader came by: if an ACK waits with one segment held, which of the
 * "pushed and everything read" conditions stops the reader from sending
 * it (ackwatch_gate; rmem: the receive memory the kernel's test reads). */
static __always_inline void count_gate(struct ackwatch_counts *n, struct tcp_sock *tp, int copied, int rmem)
{
	__u8 pending = tp->inet_conn.icsk_ack.pending;

	if (!(pending & ICSK_ACK_TIMER) || tp->rcv_nxt - tp->rcv_wup > tp->inet_conn.icsk_ack.rcv_mss)
		return;
	if (copied <= 0)
		n->gate[GATE_NOT_COPIED]++;
	else if (!(pending & (ICSK_ACK_PUSHED | ICSK_ACK_PUSHED2)))
		n->gate[GATE_NOT_PUSHED]++;
	else if (rmem)
		n->gate[GATE_RMEM]++;
	else
		n->gate[GATE_OPEN]++;
}

SEC("fexit/__tcp_select_window")
int BPF_PROG(ackwatch_window, struct sock *sk, __u32 ret)
{
	struct ackwatch_cpu *c;

	if (!watched(sk) || !(c = this_cpu()))
		return 0;
	c->window_sk = (__u64)sk;
	c->window = ret;
	return 0;
}

SEC("fentry/tcp_send_delayed_ack")
int BPF_PROG(ackwatch_delayed, struct sock *sk)
{
	struct ackwatch_counts *n;
	struct ackwatch_cpu *c;
	__u64 key = (__u64)sk;
	__u32 w = WHY_OTHER;
	struct tcp_sock *tp;

	n = watched_tcp(sk, &tp);
	if (!n || !(c = this_cpu()))
		return 0;
	if (tp->rcv_nxt - tp->rcv_wup <= tp->inet_conn.icsk_ack.rcv_mss) {
		w = WHY_ONE_SEGMENT;
	} else if (c->window_sk == key && c->window < tp->rcv_wnd) {
		w = tp->rcv_wnd > tp->rcv_ssthresh ? WHY_RAISED : WHY_WINDOW;
		n->short_bytes += tp->rcv_wnd - c->window;
	}
	c->window_sk = 0; /* one result answers one decision */
	n->delayed[w]++;
	bpf_map_update_elem(&why, &key, &w, BPF_ANY);
	return 0;
}

SEC("fentry/tcp_delack_timer_handler")
int BPF_PROG(ackwatch_timer_in, struct sock *sk)
{
	struct ackwatch_cpu *c;

	if (watched(sk) && (c = this_cpu()))
		c->timer_sk = (__u64)sk;
	return 0;
}

SEC("fexit/tcp_delack_timer_handler")
int BPF_PROG(ackwatch_timer_out, struct sock *sk)
{
	struct ackwatch_cpu *c;

	if (watched(sk) && (c = this_cpu()))
		c->timer_sk = 0;
	return 0;
}

SEC("fentry/tcp_cleanup_rbuf")
int BPF_PROG(ackwatch_reader_in, struct sock *sk, int copied)
{
	struct ackwatch_counts *n;
	struct ackwatch_cpu *c;
	struct tcp_sock *tp;

	n = watched_tcp(sk, &tp);
	if (!n || !(c = this_cpu()))
		return 0;
	n->reader_calls++;
	if (timer_armed(tp))
		n->reader_pending++;
	if (!tp->is_mptcp) /* a subflow's gate is mptcp_cleanup_rbuf's */
		count_gate(n, tp, copied, sk->sk_backlog.rmem_alloc.counter);
	c->reader_sk = (__u64)sk;
	return 0;
}

/* MPTCP's reader: judges each subflow's waiting ACK on the connection's
 * receive memory. Walks the subflows read-only (mptcp.h). */
SEC("fentry/mptcp_cleanup_rbuf")
int BPF_PROG(ackwatch_mptcp_reader, struct mptcp_sock *msk, int copied)
{
	int rmem = msk->sk.icsk_inet.sk.sk_backlog.rmem_alloc.counter;
	struct mptcp_walk w;
	bool end = false;
	struct sock *ssk;
	int i;

	if (!watched((struct sock *)msk))
		return 0;
	mptcp_walk_start(&w, msk);
	for (i = 0; i < MPTCP_WALK_MAX && !end; i++) {
		struct ackwatch_counts *n;
		struct tcp_sock *tp;

		ssk = mptcp_walk_next(&w, NULL, &end);
		if (!ssk)
			continue;
		tp = bpf_rdonly_cast(ssk, bpf_core_type_id_kernel(struct tcp_sock));
		n = totals(tp);
		if (n)
			count_gate(n, tp, copied, rmem);
	}
	return 0;
}

SEC("fexit/tcp_cleanup_rbuf")
int BPF_PROG(ackwatch_reader_out, struct sock *sk, int copied)
{
	struct ackwatch_cpu *c;

	if (watched(sk) && (c = this_cpu()))
		c->reader_sk = 0;
	return 0;
}

SEC("fentry/tcp_send_ack")
int BPF_PROG(ackwatch_ack, struct sock *sk)
{
	struct ackwatch_counts *n;
	struct ackwatch_cpu *c;
	__u64 key = (__u64)sk;
	struct tcp_sock *tp;
	__u32 *w;

	n = watched_tcp(sk, &tp);
	if (!n || !(c = this_cpu()))
		return 0;
	n->acks++;
	if (c->reader_sk == key) {
		n->by_reader++;
	} else if (c->timer_sk == key) {
		w = bpf_map_lookup_elem(&why, &key);
		if (w && *w < WHYS)
			n->by_timer[*w]++;
		else
			n->by_timer[WHY_OTHER]++;
	}
	return 0;
}
