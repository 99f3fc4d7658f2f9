// SPDX-License-Identifier: Apache-2.0

package probecc

// The same sources as pkg/cc's objects, built with -DMPTCP_PROBE_READ:
// every read of another socket through bpf_probe_read_kernel instead of
// bpf_rdonly_cast (bpf/include/mptcp.h). The compiler comes from
// $BPF2GO_CC (the Makefile sets clang-19).
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include -DMPTCP_PROBE_READ" -target bpfel -no-global-types -tags probecc_bindings lia ../../bpf/cc/lia.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include -DMPTCP_PROBE_READ" -target bpfel -no-global-types -tags probecc_bindings olia ../../bpf/cc/olia.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include -DMPTCP_PROBE_READ" -target bpfel -no-global-types -tags probecc_bindings balia ../../bpf/cc/balia.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include -DMPTCP_PROBE_READ" -target bpfel -no-global-types -tags probecc_bindings rsf ../../bpf/cc/rsf.bpf.c
//go:generate go tool bpf2go -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I../../bpf/include -DMPTCP_PROBE_READ" -target bpfel -no-global-types -tags probecc_bindings wvegas ../../bpf/cc/wvegas.bpf.c
