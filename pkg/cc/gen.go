// SPDX-License-Identifier: Apache-2.0

package cc

import "embed"

// One object per algorithm, each built from its own file in bpf/cc/. The
// compiler comes from $BPF2GO_CC (the Makefile sets clang-19).
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings lia ../../bpf/cc/lia.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings olia ../../bpf/cc/olia.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings balia ../../bpf/cc/balia.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings rsf ../../bpf/cc/rsf.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include" -target bpfel -no-global-types -tags mptcpcc_bindings wvegas ../../bpf/cc/wvegas.bpf.c

// objects are what the lines above compile, found by name (NAME_bpfel.o,
// NAME the algorithm's name in pkg/algo's table). The Go bindings bpf2go
// writes beside them are not compiled in (their build tag,
// mptcpcc_bindings, is never set): nothing names an algorithm in Go but
// the table, and each object is embedded once.
//
//go:embed *_bpfel.o
var objects embed.FS
