// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * weighted: the operator gives each path a weight (its contracted rate, or
 * a cost) and new data is split in that proportion, in bytes, among the
 * subflows that can send - what OpenMPTCProuter users run as `weight` on
 * kernels with the BPF hook. Backups only when no other subflow is usable.
 *
 * Weights name paths by endpoint: the path manager's id of the subflow's
 * local address, as `ip mptcp endpoint show` lists it (mpsch_sf.endpoint;
 * the initial subflow gets the endpoint its address came from, 0 if none).
 * The endpoint id is what an operator configures and it outlives any one
 * connection; the kernel's subflow ids do not. Tunables (--arg INDEX=VALUE):
 *
 *   arg0      the weight of every subflow whose endpoint has no weight of
 *             its own: endpoint 0 (an initial subflow from an address that
 *             is no endpoint) and endpoints above 5 (default 1);
 *   arg1-arg5 the weight of endpoint 1 to 5 (default: arg0).
 *
 * Weights are plain integers, any u32; only their ratios matter. A weight
 * belongs to each subflow from that endpoint (two subflows from one
 * endpoint to two server addresses get it each).
 *
 * The split: a credit counter per subflow, in bytes, zero-sum over the
 * subflows that competed. A decision picks, among the usable subflows of
 * the current tier with window room (sf_space), the one with the largest
 * credit (the first in the kernel's list on a tie) and grants it its
 * window room, as minrtt does. The bytes the kernel pushed after it - the
 * MPTCP-level snd_nxt's advance by the next send decision, B - are then
 * charged: every other subflow that had room at that decision gains
 * B * weight / W (W: the weights of all that had room, the chosen one
 * included, so the integer division only rounds down), and the chosen one
 * loses what they gained, so credits sum to zero and do not drift. Over a
 * run each subflow that could send got bytes in proportion to its weight;
 * a subflow without room takes no part (it neither gains nor pays: a
 * saturated path does not bank a claim on the others' share, and they
 * take the rest). The charge is for the subflow picked last, as the kernel
 * pushes on what was scheduled; B is capped at WEIGHTED_CHARGE_MAX (a
 * retransmit-all rewinds snd_nxt: a rewind charges nothing).
 *
 * State (all on send decisions; reinjections leave it alone):
 *   w[0]       snd_nxt at the last send decision
 *   w[1]       the kernel id of the subflow it picked (0: none)
 *   w[2]       bit i: sf[i] had window room then
 *   w[3 + i]   sf[i]'s (subflow id << 32) | credit as s32 bytes, i < 8.
 *              Each decision first carries the words (and the room bits)
 *              to the subflows' current list positions by id: list
 *              positions shift when a subflow closes, ids do not. A
 *              closed subflow's word goes, a new one starts at credit 0.
 *
 * Fixed point: none. Credits are whole bytes, weights integers; B * weight
 * < 2^18 * 2^32 and W < 2^35 fit in 64 bits.
 *
 * Reinjections go to the lowest-RTT idle usable subflow, as the kernel
 * default does (SCHED_RETRANS_ON_BEST): a reinjection behind a queue lands
 * no earlier than the original.
 */
#include "sched_skel.h"
#include "sched_pick.h"

#define WEIGHTED_DEFAULT_WEIGHT 1
#define WEIGHTED_CHARGE_MAX (256 << 10) /* bytes charged per decision at most: four of the kernel's largest pushes */
/* Credits stay within a few charges of zero (the largest credit is the
 * one spent); this bound only keeps an s32 from wrapping. */
#define WEIGHTED_CREDIT_MAX (1 << 30)
#define WEIGHTED_SLOT0 3

/* The weight of a subflow from endpoint e; the arg is picked by value, not
 * by index, which keeps the verifier's path count low. */
static __always_inline __u64 weighted_weight(const struct mpsch_params *p, __u32 e)
{
	__u32 def = sched_arg(p, 0, WEIGHTED_DEFAULT_WEIGHT), v = 0;

	if (e == 1)
		v = p->arg[1];
	else if (e == 2)
		v = p->arg[2];
	else if (e == 3)
		v = p->arg[3];
	else if (e == 4)
		v = p->arg[4];
	else if (e == 5)
		v = p->arg[5];
	return v ? v : def;
}

static __always_inline __u32 slot_id(const struct mpsch_state *s, int i)
{
	return (__u32)(s->w[WEIGHTED_SLOT0 + i] >> 32);
}

static __always_inline __s64 slot_credit(const struct mpsch_state *s, int i)
{
	return (__s32)(__u32)s->w[WEIGHTED_SLOT0 + i];
}

static __always_inline void slot_set(struct mpsch_state *s, int i, __u32 id, __s64 credit)
{
	if (credit > WEIGHTED_CREDIT_MAX)
		credit = WEIGHTED_CREDIT_MAX;
	if (credit < -WEIGHTED_CREDIT_MAX)
		credit = -WEIGHTED_CREDIT_MAX;
	s->w[WEIGHTED_SLOT0 + i] = (__u64)id << 32 | (__u32)(__s32)credit;
}

/* Carry each subflow's word and room bit to its current list position. */
static __always_inline void weighted_align(const struct mpsch_conn *c, struct mpsch_state *s)
{
	__u64 words[SCHED_MAX_SUBFLOWS], room = 0;

	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		__u64 v = 0;

		if (i < c->n) {
			__u32 id = c->sf[i].id;

			v = (__u64)id << 32;
			for (int k = 0; k < SCHED_MAX_SUBFLOWS; k++) {
				if (slot_id(s, k) == id) {
					v = s->w[WEIGHTED_SLOT0 + k];
					room |= ((s->w[2] >> k) & 1) << i;
				}
			}
		}
		words[i] = v;
	}
	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++)
		s->w[WEIGHTED_SLOT0 + i] = words[i];
	s->w[2] = room;
}

/* Charge the bytes pushed since the last send decision to the subflow
 * picked then, zero-sum over those that had room then. */
static __always_inline void weighted_charge(const struct mpsch_conn *c, struct mpsch_state *s,
					    const struct mpsch_params *p)
{
	__u32 last = (__u32)s->w[1];
	__u64 b, total = 0, gained = 0;
	bool found = false;

	if (!last || c->snd_nxt <= s->w[0])
		return;
	b = c->snd_nxt - s->w[0];
	if (b > WEIGHTED_CHARGE_MAX)
		b = WEIGHTED_CHARGE_MAX;
	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		if (i >= c->n)
			break;
		if (c->sf[i].id == last)
			found = true;
		if (c->sf[i].id == last || (s->w[2] >> i) & 1)
			total += weighted_weight(p, c->sf[i].endpoint);
	}
	if (!found || !total)
		return;
	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		__u64 gain;

		if (i >= c->n)
			break;
		if (c->sf[i].id == last || !((s->w[2] >> i) & 1))
			continue;
		gain = b * weighted_weight(p, c->sf[i].endpoint) / total;
		slot_set(s, i, c->sf[i].id, slot_credit(s, i) + (__s64)gain);
		gained += gain;
	}
	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		if (i >= c->n)
			break;
		if (c->sf[i].id == last)
			slot_set(s, i, last, slot_credit(s, i) - (__s64)gained);
	}
}

__noinline int algo_send(const struct mpsch_conn *c, struct mpsch_state *s, struct mpsch_out *o)
{
	const struct mpsch_params *p = sched_params();
	__s64 best_credit = 0;
	__u64 room = 0;
	int best = -1;
	__u32 tier;

	if (!c || !s || !o)
		return 0;
	weighted_align(c, s);
	weighted_charge(c, s, p);
	tier = sched_tier(c);
	for (int i = 0; i < SCHED_MAX_SUBFLOWS; i++) {
		const struct mpsch_sf *f;
		__s64 credit;

		if (i >= c->n)
			break;
		f = &c->sf[i];
		if (!sf_in_tier(f, tier) || !sf_space(f))
			continue;
		room |= 1ull << i;
		credit = slot_credit(s, i);
		if (best < 0 || credit > best_credit) {
			best = i;
			best_credit = credit;
		}
	}
	s->w[0] = c->snd_nxt;
	s->w[1] = best >= 0 && best < SCHED_MAX_SUBFLOWS ? c->sf[best].id : 0;
	s->w[2] = room;
	sched_choose(c, best, o);
	return 0;
}

SCHED_RETRANS_ON_BEST()

SCHED_STRUCT_OPS(weighted, "mpcc_weighted");
