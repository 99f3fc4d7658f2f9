// SPDX-License-Identifier: Apache-2.0

package abi

// The types BPF shares with Go, from the BTF of bpf/abi.bpf.c (an object
// with no program). Each -type is a struct or enum of cc_types.h or
// sched_types.h; the nested structs are named too, so that Go code can
// name them (abi.go re-exports them all). The compiler comes from
// $BPF2GO_CC (the Makefile sets clang-19).
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -type mpcc_params -type mpcc_subflow -type mpcc_trace_event -type mpcc_conn -type mpcc_path -type mpcc_subflow_flag -type mpcc_trace_kind -type mpcc_trace_flag -type mpsch_params -type mpsch_trace -type mpsch_conn -type mpsch_sf -type mpsch_state -type mpsch_out -type mpsch_sf_stats -type mpsch_sf_flag abi ../../bpf/abi.bpf.c
