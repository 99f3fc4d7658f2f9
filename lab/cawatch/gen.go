// SPDX-License-Identifier: Apache-2.0

package cawatch

// The read-only watch on congestion state. The compiler comes from
// $BPF2GO_CC (the Makefile sets clang-19).
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -type cawatch_sighting -type cawatch_counts cawatch ../../bpf/lab/cawatch.bpf.c
