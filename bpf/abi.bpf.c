// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * abi.bpf.c: no program, only the types BPF shares with Go. Every struct
 * and enum of cc_types.h and sched_types.h that a map, a ring buffer or a
 * parameter carries is named once below, so that it lands in this
 * object's BTF, where bpf2go -type finds it and writes the Go type
 * (pkg/abi). The Go side never copies a C struct by hand.
 *
 * A new shared type: add it here and a -type to pkg/abi/gen.go, then name
 * it in pkg/abi/abi.go.
 */
#include "vmlinux.h"

#include "cc_types.h"
#include "sched_types.h"

/* Unused pointers: enough for clang to emit each type's BTF, and no
 * storage or map comes of them. */
const struct mpcc_params *abi_mpcc_params __attribute__((unused));
const struct mpcc_subflow *abi_mpcc_subflow __attribute__((unused));
const struct mpcc_trace_event *abi_mpcc_trace_event __attribute__((unused));
const enum mpcc_subflow_flag *abi_mpcc_subflow_flag __attribute__((unused));
const enum mpcc_trace_kind *abi_mpcc_trace_kind __attribute__((unused));
const enum mpcc_trace_flag *abi_mpcc_trace_flag __attribute__((unused));

const struct mpsch_params *abi_mpsch_params __attribute__((unused));
const struct mpsch_trace *abi_mpsch_trace __attribute__((unused));
const struct mpsch_sf_stats *abi_mpsch_sf_stats __attribute__((unused));
const enum mpsch_sf_flag *abi_mpsch_sf_flag __attribute__((unused));
