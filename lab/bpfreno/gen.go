// SPDX-License-Identifier: Apache-2.0

package bpfreno

// The kernel's Reno through struct_ops. The compiler comes from $BPF2GO_CC
// (the Makefile sets clang-19).
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types bpfreno ../../bpf/lab/bpfreno.bpf.c
