/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sched_types.h: what a packet scheduler decides from and what it answers,
 * shared by every file in bpf/sched/. Go does not copy these: pkg/abi
 * generates its types from this header with bpf2go -type (bpf/abi.bpf.c
 * names each one). The skeleton (sched_skel.h) fills a struct mpsch_conn,
 * the algorithm answers in a struct mpsch_out and may keep up to
 * SCHED_STATE_WORDS words of its own per connection. The Go reference
 * models (pkg/schedmodel) take the same three generated structs, so a
 * traced decision replays through them.
 *
 * Units: times in microseconds, windows in packets, sizes in bytes, rates
 * in bytes per second. No fixed-point scale crosses this interface except
 * where a field says so.
 */
#pragma once

#define SCHED_MAX_SUBFLOWS 8  /* subflows one decision sees (the kernel's MPTCP_SUBFLOWS_MAX) */
#define SCHED_STATE_WORDS 16 /* per-connection words an algorithm owns */

/* Flags of a subflow (mpsch_sf.flags; an enum, not #defines, so that
 * pkg/abi gets them). */
enum mpsch_sf_flag {
	SCHED_SF_ACTIVE = 1,  /* mptcp_subflow_active(): established, may send */
	SCHED_SF_BACKUP = 2,  /* the peer or we marked it backup (MP_PRIO) */
	SCHED_SF_MEMFREE = 4, /* its send buffer takes more (bpf_sk_stream_memory_free) */
	SCHED_SF_SS = 8,      /* in slow start (cwnd < ssthresh) */
};

/* One subflow as a decision sees it. */
struct mpsch_sf {
	__u32 id;          /* the kernel's subflow_id: unique in the connection */
	__u32 flags;       /* SCHED_SF_* */
	__u32 srtt_us;     /* smoothed RTT (0 before the first sample) */
	__u32 rttvar_us;   /* its mean deviation */
	__u32 cwnd;        /* congestion window, packets */
	__u32 ssthresh;    /* packets */
	__u32 inflight;    /* packets in flight (tcp_packets_in_flight) */
	__u32 mss;         /* bytes per packet (mss_cache) */
	__u32 notsent;     /* bytes queued on the subflow, not yet sent */
	__u32 rate_delivered; /* last delivery-rate sample: packets delivered... */
	__u32 rate_interval_us; /* ...over this interval (0: no sample yet) */
	__u32 endpoint;    /* the path manager's id of its local address (`ip mptcp endpoint`); 0: none */
	__u64 pacing_rate; /* bytes per second (sk_pacing_rate) */
	__u64 delivered;   /* packets delivered since the subflow began */
	__u64 bytes_acked; /* bytes acked since the subflow began */
};

/* The connection at the moment of a decision. */
struct mpsch_conn {
	__u64 now_us;       /* bpf_ktime_get_ns() / 1000 */
	__u64 snd_una;      /* MPTCP-level data sequence: oldest unacked byte */
	__u64 snd_nxt;      /* next new byte to send */
	__u64 write_seq;    /* end of what the application wrote */
	__u64 wnd_end;      /* right edge of the peer's receive window (mptcp_wnd_end) */
	__u32 n;            /* subflows in sf[] */
	__u32 retrans;      /* 1: the kernel asks where to reinject (get_retrans) */
	struct mpsch_sf sf[SCHED_MAX_SUBFLOWS];
};

/* The answer. */
struct mpsch_out {
	__u32 mask;  /* bit i: send on sf[i]; 0: nothing now (the kernel asks again on the next ACK) */
	__u32 burst; /* bytes the kernel may push before it asks again (msk->snd_burst); 0: leave it */
};

/* An algorithm's own per-connection words; each file says what it keeps. */
struct mpsch_state {
	__u64 w[SCHED_STATE_WORDS];
};

/* Load-time parameters, written by the loader before attach. */
struct mpsch_params {
	__u32 trace; /* 1: every decision goes to the trace ring buffer */
	__u32 algo;  /* the scheduler's id (pkg/algo; mpsch_algo_id in sched_skel.h) */
	__u32 arg[6]; /* algorithm tunables (each file says which it reads; 0: its default) */
};

/* One decision with everything it was made from. */
struct mpsch_trace {
	__u32 token;
	__u32 ret; /* what the program returned to the kernel */
	struct mpsch_conn conn;
	struct mpsch_state before;
	struct mpsch_state after;
	struct mpsch_out out;
};

/* What each subflow was given by a loaded scheduler, keyed by
 * (token << 32 | subflow id); `mptcp-cc subflows` and the metrics read it. */
struct mpsch_sf_stats {
	__u32 token;
	__u32 id;
	__u16 family;
	__u16 sport; /* host order */
	__u16 dport;
	__u16 pad;
	__u8 saddr[16]; /* network order; IPv4 in the first 4 bytes */
	__u8 daddr[16];
	__u64 sends;     /* get_send decisions that picked it */
	__u64 retrans;   /* get_retrans decisions that picked it */
	__u64 burst_bytes; /* bytes of burst granted to it */
	__u64 last_us;   /* the snapshot's now_us at its last pick */
};

#define SCHED_MAX_TRACKED 16384 /* subflows in the stats map (LRU beyond) */

