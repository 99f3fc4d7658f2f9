// SPDX-License-Identifier: Apache-2.0

package connctl

// The iter/tcp program that switches the congestion control of a live
// connection. The compiler comes from $BPF2GO_CC (the Makefile sets clang-19).
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -type setcc_record setcc ../../bpf/setcc.bpf.c
