// SPDX-License-Identifier: Apache-2.0

package policy

// The cgroup sock_ops program of the per-cgroup policy. The compiler comes
// from $BPF2GO_CC (the Makefile sets clang-19).
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel policy ../../bpf/policy.bpf.c
