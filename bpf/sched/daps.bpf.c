// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * daps: Delay-Aware Packet Scheduling (Sarwar, Boreli, Lochin, Mifdaoui,
 * Smith, "Mitigating receiver's buffer blocking by delay aware packet
 * scheduling in multipath data transfer", IEEE WAINA 2013), mapped onto
 * MPTCP's "which subflow takes the next in-order data".
 *
 * The paper (CMT-SCTP, two paths f fast and s slow, eta = RTT_s / RTT_f):
 * a cycle lasts RTT_s; in it the fast path sends eta * cwnd_f packets and
 * the slow path cwnd_s. DAPS numbers the cycle's packets so that those on
 * s, sent at the start of the cycle, carry the numbers that come after the
 * fast path's packets landing before them: they arrive in order, and the
 * receive buffer does not fill with fast-path data waiting for a slow
 * packet that has lower numbers.
 *
 * The mapping. MPTCP's hook only picks the subflow for the next in-order
 * data (snd_nxt), so s cannot be sent data ahead of lower-numbered data.
 * What can be done is the same layout in sequence space: before s is given
 * data, the fast path is handed - into its own send queue, beyond its
 * window - the data it will send while the s data is on its way. That data
 * leaves f while the s data is in flight and lands before it; everything
 * handed to f afterwards queues behind it and lands after. Per grant to s
 * the layout is DAPS's: [f data landing before] [s data] [f data landing
 * after].
 *
 * The lead. Of B bytes sent on s now, the first packet lands D_s later and
 * the last (B - mss_s)/r_s after it (s's bottleneck serialises the grant;
 * the first packet's own time is in srtt already). f sends the bytes
 * beyond its window at r_f bytes per second, and they land D_f after
 * leaving. So the bytes f must already hold beyond its window are
 *
 *   L = r_f * (D_s - D_f + (B - mss_s) / r_s),
 *
 * with the paper's rate estimate r = cwnd * mss / srtt and D_s - D_f =
 * k * (srtt_s - srtt_f), k = 1/2 when the paths' delays are symmetric:
 *
 *   L = cwnd_f*mss * k*(srtt_s - srtt_f) / srtt_f
 *     + (B - mss_s) * cwnd_f*srtt_s / (cwnd_s*srtt_f)
 *
 * (bytes; all integer, each product below 2^61 after the clamps below).
 *
 * In the paper's units (packets, eta = srtt_s/srtt_f) with B one packet -
 * the steady state, where s's window opens one packet per ACK - the lead
 * is cwnd_f * k * (eta - 1) packets: what f sends in the one-way delay
 * difference.
 *
 * The grant, and the kernel's granularity. The kernel pushes whole data
 * fragments before it looks at the burst: up to 32728 bytes (a 32 KiB
 * page fragment less its struct mptcp_data_frag), when the application
 * has written that much ahead (write_seq - snd_nxt). So a grant to s is B
 * = max(s's window room, that fragment), and a push to f adds a fragment
 * g at a time: f's queue can only be brought to within g of L, and s goes
 * first once the queue is nearer L than one more push would make it
 * (q >= L - g/2).
 *
 * The cycle that results: per RTT_s the slow path still sends its cwnd_s,
 * each packet behind its lead, and the fast path, never idle, sends
 * eta * cwnd_f. That is the paper's cycle and its split, fast : slow =
 * eta*cwnd_f : cwnd_s = r_f : r_s; for the seed's cases (asymmetry
 * A = C1*RTT1 / (C0*RTT0) = cwnd_s/cwnd_f with windows at the path's BDP)
 * it is eta / A: 5/5 = 1, 10/10 = 1, 10/3.33 = 3
 * (pkg/schedmodel/daps_test.go runs the three through a packet model).
 *
 * The rule, at each decision:
 *   f = the usable subflow of the tier with the lowest srtt, window or not;
 *   s = the next lowest-srtt usable one with window room; none: f alone,
 *       as minrtt (its window room, nothing when full);
 *   q = f's bytes queued beyond its window (notsent - window room; < 0
 *       when it has room);
 *   B = max(s's room, the fragment the kernel pushes), at least a packet;
 *   g = the fragment (at least a packet); L = the lead for B;
 *   q >= L - g/2: s, burst B;
 *   else:         f, burst L - q: its room plus the missing lead (at least
 *                 one packet). The kernel then asks again, and s's turn
 *                 comes next.
 * Reinjections go to the lowest-RTT usable subflow that is idle (nothing
 * in flight, nothing queued), or nowhere (SCHED_RETRANS_ON_BEST): behind
 * the fast path's lead a reinjection lands no earlier than the original.
 * With "the lowest RTT" instead, a slow-path loss (repaired in about
 * 1.5 RTT_s, past the connection-level timer) reinjected whole 32 KB
 * fragments behind the lead, up to 1.3x the payload on the wire in the
 * guest test.
 *
 * Per-connection words: none. The schedule's state is the fast subflow's
 * send queue, which the snapshot shows (notsent, inflight, cwnd); a
 * separate per-cycle plan would have to be kept in step with what the
 * kernel actually pushed, and the queue already is that.
 *
 * Tunable (params.arg):
 *   arg0  k, the share of the srtt difference that is the one-way delay
 *         difference, in 1/1024 (default 512: symmetric paths; at most
 *         1024, all of it on the forward path).
 *
 * Departures from the paper:
 *  - no precomputed cycle: the sequence layout is enforced per grant to
 *    the slow path, from the windows and RTTs of that moment, instead of
 *    once per RTT_s for a whole cycle. Credits would need the cycle to be
 *    sent as planned; the kernel sends what windows and ACKs allow.
 *  - the slow path's data is not sent early with later numbers (MPTCP
 *    cannot); the fast path's data is handed over early instead and waits
 *    in its send queue, up to D_s - D_f + (B - mss_s)/r_s longer than
 *    under minrtt. The wait moves from the receiver's buffer (where minrtt
 *    leaves fast data behind a slow packet) to the sender's.
 *  - one-way delays come from srtt (k above); the paper uses the RTTs.
 *  - the lead adds the slow bottleneck's time for the grant beyond its
 *    first packet ((B - mss_s) / r_s): the paper's fluid cycle has none,
 *    but the kernel's 32 KB pushes, and a window opening at once (the
 *    initial window, after a loss), are serialised at s's rate.
 *  - the layout is kept to the kernel's push granularity (a data
 *    fragment, up to 32 KB) only, not to the packet.
 *  - the lead is pushed, so it takes MPTCP receive window as the data in
 *    flight does; when the window is the limit the lead cannot be built
 *    and the slow path gets data later.
 *  - more than two subflows: the fastest is the reference, and each other
 *    one, in RTT order, takes data only behind a lead computed for it.
 *  - a subflow with no RTT sample yet (srtt 0) has no known delay: the
 *    lead toward it (or from it) is 0, which is minrtt's order.
 *  - when the fast subflow's send buffer is full it is not usable, and the
 *    slow one takes data without a lead; by then f holds a send buffer's
 *    worth, more than any lead.
 */
#include "sched_skel.h"
#include "sched_pick.h"

#define DAPS_K_DEF 512           /* arg0 default: half the srtt difference, 1/1024 */
#define DAPS_K_ONE 1024          /* the scale of k */
#define DAPS_RTT_CAP (1u << 24)  /* us (16.7 s): keeps the products below 2^61 */
#define DAPS_CWND_CAP (1u << 20) /* packets */
#define DAPS_MSS_CAP 0xffff
/* The most the kernel pushes in one go whatever the burst: a data fragment,
 * a 32 KiB page fragment less its struct mptcp_data_frag (40 bytes). */
#define DAPS_FRAG (32768 - 40)

static __always_inline __u64 daps_clamp(__u64 v, __u64 lo, __u64 hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The usable subflow of the tier other than f with window room and the
 * lowest srtt (ties: the first); -1 when there is none. */
static __always_inline int daps_next(const struct mpsch_conn *c, int f)
{
	__u32 tier = sched_tier(c), best_rtt = ~0u;
	int best = -1;

	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		const struct mpsch_sf *x;

		if (i >= c->n)
			break;
		x = &c->sf[i];
		if (i == f || !sf_in_tier(x, tier) || !sf_space(x))
			continue;
		if (x->srtt_us < best_rtt) {
			best_rtt = x->srtt_us;
			best = i;
		}
	}
	return best;
}

/* L: bytes f must hold beyond its window before b bytes go on s. */
static __always_inline __u64 daps_lead(const struct mpsch_sf *f, const struct mpsch_sf *s, __u64 b,
				       __u64 k)
{
	__u64 rf, rs, cf, cs, mss, d, extra;

	if (!f->srtt_us || !s->srtt_us)
		return 0;
	rf = daps_clamp(f->srtt_us, 1, DAPS_RTT_CAP);
	rs = daps_clamp(s->srtt_us, 1, DAPS_RTT_CAP);
	cf = daps_clamp(f->cwnd, 1, DAPS_CWND_CAP);
	cs = daps_clamp(s->cwnd, 1, DAPS_CWND_CAP);
	mss = daps_clamp(f->mss, 1, DAPS_MSS_CAP);
	d = rs > rf ? (rs - rf) * k / DAPS_K_ONE : 0;
	extra = b > s->mss ? b - s->mss : 0;
	return cf * mss * d / rf + extra * cf * rs / (cs * rf);
}

__noinline int algo_send(const struct mpsch_conn *c, struct mpsch_state *s, struct mpsch_out *o)
{
	const struct mpsch_sf *ff, *fs;
	__u64 k, frag, b, lead, room;
	__s64 q, g;
	int f, n;

	if (!c || !s || !o)
		return 0;
	/* before the subflow indexes: the verifier loses their bounds across the call */
	k = daps_clamp(sched_arg(sched_params(), 0, DAPS_K_DEF), 0, DAPS_K_ONE);
	f = sched_lowest_rtt(c, false);
	if (f < 0 || f >= SCHED_MAX_SUBFLOWS)
		return 0;
	ff = &c->sf[f];
	n = daps_next(c, f);
	if (n < 0 || n >= SCHED_MAX_SUBFLOWS) {
		if (sf_space(ff))
			sched_choose(c, f, o);
		return 0;
	}
	fs = &c->sf[n];
	frag = c->write_seq > c->snd_nxt ? c->write_seq - c->snd_nxt : 0;
	if (frag > DAPS_FRAG)
		frag = DAPS_FRAG;
	b = sf_space(fs);
	b = daps_clamp(b > frag ? b : frag, fs->mss, SCHED_BURST_MAX);
	lead = daps_clamp(daps_lead(ff, fs, b, k), 0, 0xffffffffu);
	room = ff->cwnd > ff->inflight ? (__u64)(ff->cwnd - ff->inflight) * ff->mss : 0;
	q = (__s64)ff->notsent - (__s64)room;
	g = frag > ff->mss ? frag : ff->mss;
	if (2 * q >= 2 * (__s64)lead - g) {
		o->mask = 1u << n;
		o->burst = b;
		return 0;
	}
	o->mask = 1u << f;
	o->burst = daps_clamp((__u64)((__s64)lead - q), ff->mss, 0xffffffffu);
	return 0;
}

SCHED_RETRANS_ON_BEST()

SCHED_STRUCT_OPS(daps, "mpcc_daps");
