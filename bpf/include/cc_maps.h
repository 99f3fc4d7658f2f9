/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cc_maps.h: the maps through which a loaded congestion control meets user
 * space, one instance of each per loaded algorithm (pkg/cc pins them beside
 * the struct_ops link): the live subflows, the load-time parameters, the
 * decision trace. Their names, types and sizes are what pkg/cc, pkg/stats
 * and `mptcp-cc list` open. Included by the cc_*.h headers that use them.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "cc_types.h"

/* Live state of every subflow that runs this CC, keyed by mpcc_priv.id.
 * Created at init, deleted at release: closed subflows leave nothing. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MPCC_MAX_SUBFLOWS_TRACKED);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct mpcc_subflow);
} subflows SEC(".maps");

/* How many subflows found the subflows map full (it holds
 * MPCC_MAX_SUBFLOWS_TRACKED unless the loader set fewer). They run the
 * algorithm as every other subflow does, since the coupling reads siblings
 * from the kernel, not from the map; only the readers (`mptcp-cc list`,
 * `subflows`, `top`, the metrics) do not see them. One counter, key 0. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} untracked SEC(".maps");

/* Load-time parameters, written by the loader before attach (and readable by
 * `mptcp-cc list`). One entry; array lookups are inlined by the verifier. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mpcc_params);
} params SEC(".maps");

/* Every decision with its inputs, only while params.trace is set: the
 * differential tests replay these through the Go model. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} trace SEC(".maps");

/* Subflow ids are unique across algorithms: the algorithm sits in the top byte. */
__u64 next_id = 0;

/* The parameters, or all-zero ones (every option off) before the loader
 * has written them. */
static __always_inline const struct mpcc_params *mpcc_params(void)
{
	static const struct mpcc_params defaults = {};
	__u32 zero = 0;
	const struct mpcc_params *p = bpf_map_lookup_elem(&params, &zero);

	return p ? p : &defaults;
}
