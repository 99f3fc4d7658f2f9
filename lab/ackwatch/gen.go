// SPDX-License-Identifier: Apache-2.0

package ackwatch

// The read-only watch on a receiver's ACK decisions. The compiler comes
// from $BPF2GO_CC (the Makefile sets clang-19).
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -type ackwatch_counts ackwatch ../../bpf/lab/ackwatch.bpf.c
