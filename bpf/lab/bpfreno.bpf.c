// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bpfreno.bpf.c: the kernel's own Reno, reached through BPF struct_ops
 * (lab/bpfreno). A measuring instrument, not an algorithm of ours.
 *
 * Each callback calls the kernel's Reno (tcp_reno_ssthresh,
 * tcp_reno_cong_avoid, tcp_reno_undo_cwnd, kfuncs since Linux 5.13), so the
 * only thing that differs from the built-in "reno" is the path: the
 * struct_ops trampoline into a BPF program and the kfunc call out of it.
 * No coupling, no maps, no private state. Two questions use it:
 *
 *   - the ssthresh anomaly (docs/kernel-faults.md, section 2): does the
 *     struct_ops path show it where the built-in Reno on the same MPTCP
 *     subflows does not?
 *   - the cost of a BPF congestion control (`make bench`): goodput and CPU
 *     per GB against the built-in Reno, with no algorithm in between.
 *
 * Departures from the built-in Reno: none in what it computes. It has no
 * init, release or set_state (Reno has none either).
 *
 * The second congestion control here, bpfnull, is the same path with
 * nothing behind cong_avoid: the window never grows. It exists for one
 * number, the floor of the kernel's run-time accounting of a struct_ops
 * call (two clock reads and the trampoline around an empty program), which
 * the cost bench subtracts from each cong_avoid's figure: on a host where
 * the clock is slow to read, the floor alone can be 150 ns.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "Dual BSD/GPL";

extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

SEC("struct_ops")
__u32 BPF_PROG(bpfreno_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
void BPF_PROG(bpfreno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(bpfreno_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(bpfnull_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
void BPF_PROG(bpfnull_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
}

SEC("struct_ops")
__u32 BPF_PROG(bpfnull_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops bpfnull = {
	.ssthresh = (void *)bpfnull_ssthresh,
	.cong_avoid = (void *)bpfnull_cong_avoid,
	.undo_cwnd = (void *)bpfnull_undo_cwnd,
	.name = "bpf_null",
};

SEC(".struct_ops.link")
struct tcp_congestion_ops bpfreno = {
	.ssthresh = (void *)bpfreno_ssthresh,
	.cong_avoid = (void *)bpfreno_cong_avoid,
	.undo_cwnd = (void *)bpfreno_undo_cwnd,
	.name = "bpf_reno",
};
