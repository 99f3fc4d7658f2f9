// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * papd: Proactive Approach to avoid Performance Degradation (F. Wang,
 * J. Zuo, Z. Cao, K. Zheng, draft-zuo-mptcp-degradation-00 and its IETF
 * slides). Aggregating paths is not always a gain: with a receive buffer
 * buf <= RTT_max * T' (T' the best single path's throughput) the
 * multipath throughput is at most buf / RTT_max <= T', and head-of-line
 * blocking makes it worse. PAPD measures instead of modelling: the
 * throughput of each path and of the multipath aggregate, and per period
 * uses all paths or only the best one, whichever measured better.
 *
 * Measurement (every get_send):
 *  - per subflow, BBR-style: the kernel's last delivery-rate sample,
 *    rate_delivered * mss / rate_interval_us (not cwnd/srtt, which random
 *    losses make swing), into a windowed max filter: the max over the
 *    current period and the previous one. A sample counts once: it enters
 *    only when the subflow's `delivered` changed since it was last seen,
 *    so a subflow given no data ages out of the filter in two periods.
 *    Keyed by the kernel's subflow id (stable for the subflow's life).
 *  - the aggregate: MPTCP-level bytes acked per second over the period,
 *    (snd_una at its end - snd_una at its start) / its length.
 *
 * Stages and modes:
 *  - slow-start stage (while any usable subflow is in slow start and the
 *    aggregate still grows): REDUNDANT - every usable subflow with window
 *    room is marked, so each path carries data and is measured. Periods
 *    last one RTT_max (BBR's round). The stage ends, for good, when no
 *    usable subflow is in slow start or at BBR's full-pipe test: three
 *    periods in a row whose aggregate did not grow by 25% over the
 *    highest so far. (Without the second test a connection whose windows
 *    the receive buffer caps never leaves: cwnd < ssthresh stays true.)
 *  - congestion-avoidance stage, periods of arg0 * RTT_max:
 *      MP   - minrtt over every usable subflow;
 *      BEST - only the best path: its window room, nothing when full
 *             (the kernel asks again on the next ACK).
 *    At the end of an MP period: MP again if aggregate * 1024 >=
 *    T' * arg1, else BEST on the path with the highest filtered rate.
 *    A BEST period cannot measure what multipath would do, so after arg2
 *    BEST periods one MP period is run again (the re-probe), and its
 *    aggregate decides as above; the max filter still holds T' from the
 *    BEST period before it. A better aggregate is thus found again within
 *    arg2 + 1 periods; a worse one costs one period in arg2 + 1. At the
 *    end of a BEST period the best path is re-chosen from the filter.
 *  - reinjections: REDUNDANT: on every usable subflow (the kernel sends a
 *    reinjection on each marked subflow); BEST: the best path; otherwise
 *    as SCHED_RETRANS_ON_BEST (the lowest-RTT idle subflow, or none).
 *
 * Tunables (params.arg; 0 keeps the default):
 *   arg0  congestion-avoidance period, in RTT_max (default 4);
 *   arg1  multipath wins when aggregate >= T' * arg1 / 1024 (default 1024:
 *         at least as fast as the best path alone; at most 2^20);
 *   arg2  BEST periods between multipath re-probes (default 8).
 *
 * Per-connection words:
 *   w[0] mode (PAPD_REDUNDANT, PAPD_MP, PAPD_BEST; 0 before the first decision)
 *   w[1] the best path's subflow id (BEST)
 *   w[2] BEST periods since the last MP period
 *   w[3] period start, us
 *   w[4] snd_una at the period start
 *   w[5] aggregate of the last finished period, bytes/s
 *   w[6] full-pipe test: highest aggregate of the slow-start stage, bytes/s
 *   w[7] full-pipe test: periods without 25% growth (>= 3: the stage is over)
 *   w[8..15] one subflow each: bits 63..56 key (id % 255 + 1; 0: free),
 *        55..44 the low 12 bits of `delivered` when last seen, 43..22 the
 *        max rate of this period, 21..0 of the previous one; rates in units
 *        of 2^10 bytes/s, saturating at 2^22 - 1 (about 34 Gbit/s).
 *
 * Departures from the draft:
 *  - redundant mode does not duplicate new data: when several subflows
 *    are marked the kernel spreads new data across them (only
 *    reinjections go on each). The draft sends the same data on every
 *    path; here every path still carries data and gets measured, which is
 *    what the mode is for, and the aggregate of the stage is a multipath
 *    one.
 *  - the slow-start stage also ends at BBR's full-pipe test (see above).
 *  - the draft measures with BBR's estimator inside its congestion
 *    control; here the rates are the kernel's delivery-rate samples of
 *    whatever congestion control the subflows run, filtered here.
 *  - the period, the threshold and the re-probe interval are not in the
 *    draft: they are tunables with the defaults above.
 *  - the best path is the one with the highest filtered delivery rate
 *    (ties: the lower srtt, then the first); the draft does not say how
 *    it ranks.
 */
#include "sched_skel.h"
#include "sched_pick.h"

#define PAPD_REDUNDANT 1
#define PAPD_MP 2
#define PAPD_BEST 3

#define W_MODE 0
#define W_BEST 1
#define W_BESTN 2
#define W_START 3
#define W_UNA 4
#define W_AGG 5
#define W_FULL_BW 6
#define W_FULL_CNT 7
#define W_SLOT 8

#define PAPD_PERIOD_DEF 4   /* arg0: RTT_max per congestion-avoidance period */
#define PAPD_GAIN_DEF 1024  /* arg1: 1/1024 */
#define PAPD_PROBE_DEF 8    /* arg2: BEST periods per re-probe */
#define PAPD_ONE 1024       /* the scale of arg1 and of the full-pipe growth */
#define PAPD_FULL_GROWTH 1280 /* BBR: the pipe fills when the rate grows < 25%... */
#define PAPD_FULL_ROUNDS 3    /* ...three periods in a row */

#define PAPD_RATE_SHIFT 10
#define PAPD_RATE_MAX ((1ull << 22) - 1)
#define PAPD_DLV_MASK 0xfffull
#define PAPD_BYTES_CAP (1ull << 43) /* keeps bytes * 10^6 below 2^63 */
#define PAPD_AGG_CAP (1ull << 40)   /* bytes/s: keeps agg * 1280 below 2^51 */
#define PAPD_GAIN_CAP (1u << 20)    /* arg1: keeps rate * arg1 below 2^52 */

static __always_inline __u64 slot_key(__u64 w) { return w >> 56; }
static __always_inline __u64 slot_dlv(__u64 w) { return (w >> 44) & PAPD_DLV_MASK; }
static __always_inline __u64 slot_cur(__u64 w) { return (w >> 22) & PAPD_RATE_MAX; }
static __always_inline __u64 slot_prev(__u64 w) { return w & PAPD_RATE_MAX; }

static __always_inline __u64 slot_make(__u64 key, __u64 dlv, __u64 cur, __u64 prev)
{
	return key << 56 | (dlv & PAPD_DLV_MASK) << 44 | cur << 22 | prev;
}

static __always_inline __u64 papd_key(__u32 id) { return id % 255 + 1; }

/* bytes * 10^6 / us, with bytes capped so the product fits. */
static __always_inline __u64 papd_per_sec(__u64 bytes, __u64 us)
{
	if (!us)
		return 0;
	if (bytes > PAPD_BYTES_CAP)
		bytes = PAPD_BYTES_CAP;
	return bytes * 1000000 / us;
}

/* The subflow's last delivery-rate sample, in filter units. */
static __always_inline __u64 papd_sample(const struct mpsch_sf *f)
{
	__u64 r = papd_per_sec((__u64)f->rate_delivered * f->mss, f->rate_interval_us) >> PAPD_RATE_SHIFT;

	return r > PAPD_RATE_MAX ? PAPD_RATE_MAX : r;
}

/* Frees the slots of subflows gone from the snapshot, then enters every
 * subflow's new sample into its slot. */
static __always_inline void papd_filter(const struct mpsch_conn *c, struct mpsch_state *s)
{
	for (int j = 0; j < 8; j++) {
		__u64 key = slot_key(s->w[W_SLOT + j]);
		bool present = false;

		if (!key)
			continue;
		for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
			if (i >= c->n)
				break;
			if (papd_key(c->sf[i].id) == key)
				present = true;
		}
		if (!present)
			s->w[W_SLOT + j] = 0;
	}
	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		const struct mpsch_sf *f;
		__u64 key, w, cur;
		int at = -1, free = -1;

		if (i >= c->n)
			break;
		f = &c->sf[i];
		if (!f->rate_interval_us)
			continue;
		key = papd_key(f->id);
		for (int j = 0; j < 8; j++) {
			__u64 k = slot_key(s->w[W_SLOT + j]);

			if (k == key && at < 0)
				at = j;
			if (!k && free < 0)
				free = j;
		}
		if (at < 0) {
			at = free;
			if (at < 0 || at >= 8)
				continue;
			/* a first sighting: its sample counts, whatever delivered is */
			s->w[W_SLOT + at] = slot_make(key, ~f->delivered, 0, 0);
		}
		if (at >= 8)
			continue;
		w = s->w[W_SLOT + at];
		if (slot_dlv(w) == (f->delivered & PAPD_DLV_MASK))
			continue;
		cur = papd_sample(f);
		if (cur < slot_cur(w))
			cur = slot_cur(w);
		s->w[W_SLOT + at] = slot_make(key, f->delivered, cur, slot_prev(w));
	}
}

/* A new filter period: this period's max becomes the previous one. */
static __always_inline void papd_rotate(struct mpsch_state *s)
{
	for (int j = 0; j < 8; j++) {
		__u64 w = s->w[W_SLOT + j];

		if (slot_key(w))
			s->w[W_SLOT + j] = slot_make(slot_key(w), slot_dlv(w), 0, slot_cur(w));
	}
}

/* The filtered delivery rate of subflow id, bytes/s (0: unknown). */
static __always_inline __u64 papd_rate(const struct mpsch_state *s, __u32 id)
{
	__u64 key = papd_key(id);

	for (int j = 0; j < 8; j++) {
		__u64 w = s->w[W_SLOT + j];

		if (slot_key(w) == key) {
			__u64 r = slot_cur(w) > slot_prev(w) ? slot_cur(w) : slot_prev(w);

			return r << PAPD_RATE_SHIFT;
		}
	}
	return 0;
}

/* The usable subflow of the tier with the highest filtered rate (ties: the
 * lower srtt, then the first); -1 when none is usable. */
static __always_inline int papd_best(const struct mpsch_conn *c, const struct mpsch_state *s)
{
	__u32 tier = sched_tier(c), best_rtt = 0;
	__u64 best_rate = 0;
	int best = -1;

	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		const struct mpsch_sf *f;
		__u64 r;

		if (i >= c->n)
			break;
		f = &c->sf[i];
		if (!sf_in_tier(f, tier))
			continue;
		r = papd_rate(s, f->id);
		if (best < 0 || r > best_rate || (r == best_rate && f->srtt_us < best_rtt)) {
			best = i;
			best_rate = r;
			best_rtt = f->srtt_us;
		}
	}
	return best;
}

/* The highest srtt among the usable subflows of the tier, and whether any
 * of them is in slow start. */
static __always_inline __u32 papd_rtt_max(const struct mpsch_conn *c, bool *ss)
{
	__u32 tier = sched_tier(c), m = 0;

	*ss = false;
	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		const struct mpsch_sf *f;

		if (i >= c->n)
			break;
		f = &c->sf[i];
		if (!sf_in_tier(f, tier))
			continue;
		if (f->srtt_us > m)
			m = f->srtt_us;
		if (f->flags & SCHED_SF_SS)
			*ss = true;
	}
	return m;
}

static __always_inline void papd_new_period(const struct mpsch_conn *c, struct mpsch_state *s)
{
	s->w[W_START] = c->now_us;
	s->w[W_UNA] = c->snd_una;
	papd_rotate(s);
}

/* The index of subflow id in the snapshot if it is established and of the
 * current tier (its send buffer may be full); -1 otherwise. */
static __always_inline int papd_find(const struct mpsch_conn *c, __u64 id)
{
	__u32 tier = sched_tier(c);

	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		const struct mpsch_sf *f;

		if (i >= c->n)
			break;
		f = &c->sf[i];
		if (f->id == id && (f->flags & SCHED_SF_ACTIVE) && (f->flags & SCHED_SF_BACKUP) == tier)
			return i;
	}
	return -1;
}

/* Marks every usable subflow of the tier (with window room when
 * need_space); the burst is the smallest room among them, so no marked
 * subflow is pushed far beyond its window. */
static __always_inline void papd_all(const struct mpsch_conn *c, struct mpsch_out *o, bool need_space)
{
	__u32 tier = sched_tier(c), burst = 0;

	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		const struct mpsch_sf *f;
		__u32 room;

		if (i >= c->n)
			break;
		f = &c->sf[i];
		room = sf_space(f);
		if (!sf_in_tier(f, tier) || (need_space && !room))
			continue;
		if (room < f->mss)
			room = f->mss;
		if (!o->mask || room < burst)
			burst = room;
		o->mask |= 1u << i;
	}
	o->burst = burst;
}

/* The end of a period: the mode of the next one. */
static __always_inline void papd_decide(const struct mpsch_conn *c, struct mpsch_state *s)
{
	const struct mpsch_params *p = sched_params();
	__u64 agg, gain, una = c->snd_una > s->w[W_UNA] ? c->snd_una - s->w[W_UNA] : 0;
	int b;

	agg = papd_per_sec(una, c->now_us - s->w[W_START]);
	if (agg > PAPD_AGG_CAP)
		agg = PAPD_AGG_CAP;
	s->w[W_AGG] = agg;
	if (s->w[W_MODE] == PAPD_REDUNDANT) {
		if (agg * PAPD_ONE >= s->w[W_FULL_BW] * PAPD_FULL_GROWTH) {
			s->w[W_FULL_BW] = agg;
			s->w[W_FULL_CNT] = 0;
		} else if (++s->w[W_FULL_CNT] >= PAPD_FULL_ROUNDS) {
			s->w[W_MODE] = PAPD_MP;
		}
		return;
	}
	b = papd_best(c, s);
	if (b < 0 || b >= SCHED_MAX_SUBFLOWS) {
		s->w[W_MODE] = PAPD_MP;
		return;
	}
	if (s->w[W_MODE] == PAPD_BEST) {
		s->w[W_BEST] = c->sf[b].id;
		if (++s->w[W_BESTN] >= sched_arg(p, 2, PAPD_PROBE_DEF)) {
			s->w[W_MODE] = PAPD_MP;
			s->w[W_BESTN] = 0;
		}
		return;
	}
	gain = sched_arg(p, 1, PAPD_GAIN_DEF);
	if (gain > PAPD_GAIN_CAP)
		gain = PAPD_GAIN_CAP;
	if (agg * PAPD_ONE >= papd_rate(s, c->sf[b].id) * gain)
		return;
	s->w[W_MODE] = PAPD_BEST;
	s->w[W_BEST] = c->sf[b].id;
	s->w[W_BESTN] = 0;
}

/* Advances the stage, mode and period to now. */
static __always_inline void papd_update(const struct mpsch_conn *c, struct mpsch_state *s)
{
	bool ss;
	__u32 rtt_max = papd_rtt_max(c, &ss);
	__u64 len;

	papd_filter(c, s);
	ss = ss && s->w[W_FULL_CNT] < PAPD_FULL_ROUNDS;
	if (!s->w[W_MODE]) {
		s->w[W_MODE] = ss ? PAPD_REDUNDANT : PAPD_MP;
		if (!ss)
			s->w[W_FULL_CNT] = PAPD_FULL_ROUNDS;
		s->w[W_START] = c->now_us;
		s->w[W_UNA] = c->snd_una;
		return;
	}
	if (s->w[W_MODE] == PAPD_REDUNDANT && !ss) {
		s->w[W_MODE] = PAPD_MP;
		s->w[W_FULL_CNT] = PAPD_FULL_ROUNDS;
		papd_new_period(c, s);
		return;
	}
	len = s->w[W_MODE] == PAPD_REDUNDANT ? 1 : sched_arg(sched_params(), 0, PAPD_PERIOD_DEF);
	if (!rtt_max || c->now_us - s->w[W_START] < len * rtt_max)
		return;
	papd_decide(c, s);
	papd_new_period(c, s);
}

__noinline int algo_send(const struct mpsch_conn *c, struct mpsch_state *s, struct mpsch_out *o)
{
	int b;

	if (!c || !s || !o)
		return 0;
	papd_update(c, s);
	if (s->w[W_MODE] == PAPD_REDUNDANT) {
		papd_all(c, o, true);
		return 0;
	}
	if (s->w[W_MODE] == PAPD_BEST) {
		b = papd_find(c, s->w[W_BEST]);
		if (b >= 0 && b < SCHED_MAX_SUBFLOWS) {
			if (sf_usable(&c->sf[b]) && sf_space(&c->sf[b]))
				sched_choose(c, b, o);
			return 0;
		}
	}
	sched_choose(c, sched_lowest_rtt(c, true), o);
	return 0;
}

__noinline int algo_retrans(const struct mpsch_conn *c, struct mpsch_state *s, struct mpsch_out *o)
{
	int b;

	if (!c || !s || !o)
		return 0;
	if (s->w[W_MODE] == PAPD_REDUNDANT) {
		papd_all(c, o, false);
		return 0;
	}
	if (s->w[W_MODE] == PAPD_BEST) {
		b = papd_find(c, s->w[W_BEST]);
		if (b >= 0 && b < SCHED_MAX_SUBFLOWS && sf_usable(&c->sf[b])) {
			sched_choose(c, b, o);
			return 0;
		}
	}
	sched_choose(c, sched_lowest_rtt_where(c, SCHED_PICK_IDLE), o);
	return 0;
}

SCHED_STRUCT_OPS(papd, "mpcc_papd");
