// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * policy.bpf.c: per-cgroup congestion control policy (cgroup sock_ops).
 *
 * One instance of this program (with its own maps) is attached to each
 * cgroup v2 that has a policy (pkg/policy). It runs for every TCP socket
 * whose creating task is in that cgroup or below it, and chooses the
 * congestion control of MPTCP subflows (and, if a rule says so, of plain TCP
 * sockets) when they become established:
 *
 *   ACTIVE_ESTABLISHED_CB   the SYN-ACK arrived (client side, initial
 *                           subflow and joins)
 *   PASSIVE_ESTABLISHED_CB  the final ACK of the handshake arrived (server
 *                           side; the accepted subflows inherit the cgroup of
 *                           the listener)
 *
 * That is the moment the kernel initialises the congestion control itself
 * (tcp_init_transfer: the initial window is set, then this callback runs,
 * then the CC's init unless the callback already set one), so the chosen CC
 * starts exactly as if the application had picked it with setsockopt before
 * connect(). Setting it at TCP_CONNECT_CB instead would init the CC in
 * SYN_SENT, and tcp_init_transfer would then overwrite the window the CC's
 * init chose (LISA's share for a joining subflow).
 *
 * Decision, per subflow:
 *
 *  1. A subflow that joins a connection whose other subflows are established
 *     takes their congestion control: one connection runs one CC (a coupled
 *     CC only couples subflows that run the same instance), and a switch made
 *     after connect (setsockopt on the MPTCP socket, `mptcp-cc set --token`)
 *     also holds for later joins.
 *  2. Otherwise the rules decide: the most specific rule wins. Rules live in
 *     an LPM trie keyed by (socket kind, has port, port, peer address);
 *     the longest matching peer prefix wins, and between rules with the same
 *     prefix one that names a port beats one that does not. The port is the
 *     service port: the remote port of a connection the cgroup opens, the
 *     local port of one it accepts. The address is always the peer's.
 *  3. A rule may also cap the socket's delayed-ACK timer (delack_max_us):
 *     that is looked up for joins too, since it is per socket.
 *  4. Cgroup programs run from the socket's own cgroup up to the root; the
 *     first (nearest) cgroup whose policy decides marks the callback context
 *     (skops->reply, unused by these callbacks) and the policies of
 *     ancestors then step aside. The nearest policy wins.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "mptcp.h"

char _license[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define AF_INET6 10
#define SOL_TCP 6
#define TCP_CONGESTION 13
#define TCP_BPF_DELACK_MAX 1003 /* usecs, within [2 jiffies, HZ/5] */
#define CC_NAME_MAX 16

#define TCP_ESTABLISHED 1
#define TCP_FIN_WAIT1 4
#define TCP_FIN_WAIT2 5
#define TCP_CLOSE_WAIT 8
#define TCP_LAST_ACK 9
#define TCP_CLOSING 11

#define POLICY_KIND_MPTCP 1
#define POLICY_KIND_TCP 2
#define POLICY_DECIDED 0x6d706363 /* "mpcc": a nearer cgroup's policy decided */
#define POLICY_MAX_RULES 1024

/* LPM trie key: prefixlen counts the 32 bits of kind, has_port and port
 * (always compared in full) plus the address prefix. IPv4 addresses are
 * stored IPv4-mapped (::ffff:a.b.c.d), so one trie serves both families. */
struct rule_key {
	__u32 prefixlen;
	__u8 kind;     /* POLICY_KIND_* */
	__u8 has_port;
	__u16 port;    /* host order; 0 when !has_port */
	__u8 addr[16]; /* network order */
};

struct rule {
	char cc[CC_NAME_MAX]; /* congestion control name, NUL padded */
	__u32 id;             /* rule id, unique within the cgroup's policy */
	__u32 addr_bits;      /* prefix length in the IPv6 (mapped) space */
	__u32 plain_tcp;      /* the rule applies to plain TCP sockets too */
	__u32 delack_max_us;  /* the socket's delayed-ACK timer at most this; 0: the kernel's */
	__u64 applied;        /* sockets this rule chose the CC of */
};

struct counters {
	__u64 mptcp;      /* established MPTCP subflows seen */
	__u64 tcp;        /* established plain TCP sockets seen */
	__u64 matched;    /* a rule decided */
	__u64 followed;   /* a join took its connection's CC */
	__u64 changed;    /* the CC was changed */
	__u64 delack;     /* a rule capped the delayed-ACK timer */
	__u64 errors;     /* bpf_setsockopt failed (e.g. the CC was unloaded) */
	__s64 last_error; /* its errno, negative */
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, POLICY_MAX_RULES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rule_key);
	__type(value, struct rule);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counters);
} stats SEC(".maps");

static __always_inline bool names_equal(const char *a, const char *b)
{
	int i;

	for (i = 0; i < CC_NAME_MAX; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return true;
}

static __always_inline bool running(__u8 state)
{
	return state == TCP_ESTABLISHED || state == TCP_FIN_WAIT1 || state == TCP_FIN_WAIT2 ||
	       state == TCP_CLOSE_WAIT || state == TCP_LAST_ACK || state == TCP_CLOSING;
}

/*
 * The congestion control of an established sibling subflow, copied into
 * name; false when the subflow is alone. The walk reads the connection
 * through read-only casts, without the MPTCP socket's lock (as cc_conn.h):
 * a list changing under us can only end the walk early.
 */
static __always_inline bool sibling_cc(struct mptcp_sock *msk, const struct tcp_sock *self,
				       char name[CC_NAME_MAX])
{
	struct mptcp_walk w;
	bool end = false;
	__u32 i;

	mptcp_walk_start(&w, msk);
	for (i = 0; i < MPTCP_WALK_MAX; i++) {
		const struct tcp_congestion_ops *ops;
		struct inet_connection_sock *icsk;
		struct sock *ssk;

		ssk = mptcp_walk_next(&w, (const struct sock *)self, &end);
		if (end)
			break;
		if (!ssk)
			continue;
		icsk = bpf_rdonly_cast(ssk, bpf_core_type_id_kernel(struct inet_connection_sock));
		if (!running(icsk->icsk_inet.sk.__sk_common.skc_state))
			continue;
		ops = icsk->icsk_ca_ops;
		if (!ops)
			continue;
		if (bpf_probe_read_kernel(name, CC_NAME_MAX, ops->name))
			continue;
		name[CC_NAME_MAX - 1] = 0;
		if (name[0])
			return true;
	}
	return false;
}

/* The most specific rule for this socket, or NULL. */
static __always_inline struct rule *match(const struct bpf_sock_ops *skops, __u8 kind, bool passive)
{
	struct rule_key k = {};
	struct rule *with_port, *any_port;

	k.prefixlen = 32 + 128;
	k.kind = kind;
	if (skops->family == AF_INET) {
		__u32 a = skops->remote_ip4;

		k.addr[10] = 0xff;
		k.addr[11] = 0xff;
		__builtin_memcpy(&k.addr[12], &a, 4);
	} else if (skops->family == AF_INET6) {
		__u32 a[4];

		a[0] = skops->remote_ip6[0];
		a[1] = skops->remote_ip6[1];
		a[2] = skops->remote_ip6[2];
		a[3] = skops->remote_ip6[3];
		__builtin_memcpy(k.addr, a, 16);
	} else {
		return NULL;
	}

	k.has_port = 1;
	/* remote_port is in network order in the upper half (little endian) */
	k.port = passive ? (__u16)skops->local_port : (__u16)bpf_ntohl(skops->remote_port);
	with_port = bpf_map_lookup_elem(&rules, &k);
	k.has_port = 0;
	k.port = 0;
	any_port = bpf_map_lookup_elem(&rules, &k);
	if (with_port && (!any_port || with_port->addr_bits >= any_port->addr_bits))
		return with_port;
	return any_port;
}

/* The delayed-ACK timer of this socket at most us microseconds (the
 * kernel's TCP_BPF_DELACK_MAX): on a receiver, what bounds how long a
 * subflow's held ACK waits (docs/kernel-faults.md section 3). */
static __always_inline void cap_delack(struct bpf_sock_ops *skops, struct counters *st, __u32 us)
{
	int v = us;
	long err;

	err = bpf_setsockopt(skops, SOL_TCP, TCP_BPF_DELACK_MAX, &v, sizeof(v));
	if (err) {
		st->errors++;
		st->last_error = err;
	} else {
		st->delack++;
	}
}

SEC("sockops")
int mptcp_cc_policy(struct bpf_sock_ops *skops)
{
	char want[CC_NAME_MAX] = {}, cur[CC_NAME_MAX] = {};
	struct mptcp_sock *msk;
	struct counters *st;
	struct bpf_sock *bsk;
	struct tcp_sock *tp;
	struct rule *r = NULL;
	__u32 zero = 0, op = skops->op;
	bool passive;
	long err;

	if (op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB && op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		return 1;
	if (skops->reply == POLICY_DECIDED)
		return 1; /* a policy nearer to the socket's cgroup decided */
	passive = op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB;
	bsk = skops->sk;
	if (!bsk)
		return 1;
	tp = bpf_skc_to_tcp_sock(bsk);
	if (!tp)
		return 1;
	st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return 1;

	msk = bpf_skc_to_mptcp_sock(bsk);
	if (msk)
		st->mptcp++;
	else
		st->tcp++;
	/* A join follows its connection's CC, but the rule's other settings
	 * (the delayed-ACK cap) are per socket: every subflow looks it up. */
	r = match(skops, msk ? POLICY_KIND_MPTCP : POLICY_KIND_TCP, passive);
	if (msk && sibling_cc(msk, tp, want)) {
		st->followed++;
	} else {
		if (!r)
			return 1;
		__builtin_memcpy(want, r->cc, CC_NAME_MAX);
		want[CC_NAME_MAX - 1] = 0;
		st->matched++;
		__sync_fetch_and_add(&r->applied, 1);
	}
	skops->reply = POLICY_DECIDED;
	if (r && r->delack_max_us)
		cap_delack(skops, st, r->delack_max_us);

	if (!bpf_getsockopt(skops, SOL_TCP, TCP_CONGESTION, cur, sizeof(cur)) && names_equal(cur, want))
		return 1;
	err = bpf_setsockopt(skops, SOL_TCP, TCP_CONGESTION, want, sizeof(want));
	if (err) {
		st->errors++;
		st->last_error = err;
	} else {
		st->changed++;
	}
	return 1;
}
