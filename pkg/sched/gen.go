// SPDX-License-Identifier: Apache-2.0

package sched

import "embed"

// One object per scheduler, each built from its own file in bpf/sched/
// against this machine's vmlinux.h (CO-RE: they load on any kernel with
// the hook). The compiler comes from $BPF2GO_CC (the Makefile sets clang-19).
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings minrtt ../../bpf/sched/minrtt.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings rr ../../bpf/sched/rr.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings redundant ../../bpf/sched/redundant.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings blest ../../bpf/sched/blest.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings ecf ../../bpf/sched/ecf.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings daps ../../bpf/sched/daps.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings papd ../../bpf/sched/papd.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings weighted ../../bpf/sched/weighted.bpf.c

// objects are what the lines above compile, found by name (NAME_bpfel.o,
// NAME the algorithm's name in pkg/algo's table). The Go bindings bpf2go
// writes beside them are not compiled in (their build tag,
// mptcpcc_bindings, is never set): nothing names an algorithm in Go but
// the table, and each object is embedded once.
//
//go:embed *_bpfel.o
var objects embed.FS
