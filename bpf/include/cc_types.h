/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cc_types.h: what the congestion controls share with user space: the
 * params map's value, the subflows map's record (and how its socket fields
 * are filled, mpcc_record_socket), the connection snapshot the algorithms
 * decide from and the trace event that carries it. Included through
 * cc_skel.h by every bpf/cc/ file; a scheduler keeps its own types beside
 * it, so nothing here is meant for bpf/sched/.
 *
 * Go does not copy these: pkg/abi generates its types from this header
 * with bpf2go -type (bpf/abi.bpf.c names every struct and enum user space
 * reads or writes), so a field added here reaches Go at the next `make
 * generate`. pkg/model keeps its own idiomatic snapshot (a slice of paths),
 * converted from the trace explicitly. The fixed-point scales of the
 * Q16/Q32 fields are in cc_fixed.h.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

/* Algorithm ids are in one table, pkg/algo (each model registers its own);
 * an object learns its id at load time (mpcc_algo_id, cc_skel.h). */

#define MPCC_MAX_PATHS 8           /* coupled subflows per connection (power of 2) */
#define MPCC_MAX_SUBFLOWS_TRACKED 65536

/* mpcc_subflow.flags (an enum, not #defines, so that pkg/abi gets them) */
enum mpcc_subflow_flag {
	MPCC_F_MPTCP = 1,
	MPCC_F_BACKUP = 2,
	MPCC_F_PACED = 4, /* the kernel paces the subflow (sk_pacing_status) */
};

struct mpcc_params {
	__u32 lisa;          /* 1: LISA linked slow start for joining subflows */
	__u32 rsf_target_us; /* RSF: target queueing delay d, microseconds */
	__u32 trace;         /* 1: emit every decision to the trace ring buffer */
	__u32 algo;          /* the algorithm's id (pkg/algo), for `mptcp-cc list` (unused by BPF) */
	__u32 pacing;        /* 1: the kernel paces each subflow (cc_skel.h, mpcc_init) */
};

/* Value of the subflows map: one live subflow. Addresses in network order,
 * ports in host order. */
struct mpcc_subflow {
	__u64 id;
	__u32 token;
	__u32 algo;
	__u16 family;
	__u16 sport;
	__u16 dport;
	__u8 local_id;
	__u8 remote_id;
	__u32 subflow_id;
	__u32 flags;
	__u8 saddr[16];
	__u8 daddr[16];
	__u32 cwnd;        /* packets */
	__u32 ssthresh;    /* packets */
	__u32 srtt_us;
	__u32 rttvar_us;
	__u32 min_rtt_us;
	__u32 ca_state;
	__u32 in_flight;   /* packets */
	__u32 npaths;      /* coupled subflows seen at the last increase */
	__u64 delivered;   /* packets */
	__u64 lost;        /* packets */
	__u64 retrans;     /* packets */
	__u64 bytes_acked;
	__u64 bytes_sent;
	__u64 pacing_rate; /* bytes per second */
	__s64 coupled;     /* the algorithm's coupled quantity, Q32 */
	__u32 lisa_debt;   /* packets a joining sibling took, not yet given up */
	__u32 lisa_given;  /* packets given to joining siblings (LISA) */
	__u32 lisa_taken;  /* packets taken from a sibling when this subflow joined */
	__u32 repairs;     /* implausible kernel-set windows replaced (cc_guard.h) */
	__u64 updated_ns;  /* CLOCK_MONOTONIC */
};

/* The record's fields that come straight from the socket, set beside the
 * struct so that a new one is one place: its field above and its line
 * here (then its metric in pkg/metrics/families.go and its row in
 * docs/metrics.md). mpcc_update (cc_obs.h) calls it on every refresh and
 * sets the rest (token, coupled state, LISA, flags, time). */
static __always_inline void mpcc_record_socket(struct mpcc_subflow *s, const struct sock *sk,
					       const struct tcp_sock *tp)
{
	s->cwnd = tp->snd_cwnd;
	s->ssthresh = tp->snd_ssthresh;
	s->srtt_us = tp->srtt_us >> 3;
	s->rttvar_us = tp->mdev_us >> 2;
	s->min_rtt_us = tp->rtt_min.s[0].v;
	s->in_flight = tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
	s->delivered = tp->delivered;
	s->lost = tp->lost;
	s->retrans = tp->total_retrans;
	s->bytes_acked = tp->bytes_acked;
	s->bytes_sent = tp->bytes_sent;
	s->pacing_rate = sk->sk_pacing_rate;
}

/* One path of the connection snapshot the algorithms see. */
struct mpcc_path {
	__u32 cwnd;
	__u32 srtt_us;    /* >= 1 */
	__u32 min_rtt_us;
	__u32 pad;
	__u64 loss_bytes; /* OLIA l_r */
};

/* Everything an algorithm decides from: p[0] is the subflow being acted on,
 * p[1..n-1] its coupled siblings. */
struct mpcc_conn {
	__u32 n;         /* paths in p[], >= 1 */
	__u32 target_us; /* RSF's target queueing delay d, from the parameters */
	struct mpcc_path p[MPCC_MAX_PATHS];
};

/* What an algorithm hook returns. */
struct mpcc_out {
	__s64 inc;      /* algo_increase: cwnd increase per ACKed packet, Q32 */
	__s64 coupled;  /* the algorithm's coupled quantity, Q32 */
	__u32 ssthresh; /* algo_ssthresh: the window after a loss, packets */
	__u32 pad;
};

/* mpcc_trace_event.kind */
enum mpcc_trace_kind {
	MPCC_TRACE_AVOID = 1, /* congestion avoidance step */
	MPCC_TRACE_LOSS = 2,  /* ssthresh after a loss */
	MPCC_TRACE_LISA = 3,  /* a donor repays the window a joiner took (cc_lisa.h) */
};

/* mpcc_trace_event.flags */
enum mpcc_trace_flag {
	MPCC_TRACE_F_REDUCING = 1, /* the repayment came during a window reduction */
};

struct mpcc_trace_event {
	__u64 id;
	__u32 kind;
	__u32 acked;       /* packets acked (before slow start took its part); LISA: the debt */
	__u32 cwnd_before;
	__u32 cwnd_after;
	__s64 acc_before;
	__s64 acc_after;
	__u32 ssthresh;    /* AVOID: ssthresh in force; LOSS: the value returned */
	__u32 ssthresh_after;
	__u32 clamp;       /* LISA: the loss window (prior_cwnd) */
	__u32 flags;       /* LISA: MPCC_TRACE_F_REDUCING */
	__s64 coupled;
	struct mpcc_conn conn;
};
