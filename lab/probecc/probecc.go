// SPDX-License-Identifier: Apache-2.0

// Package probecc holds the coupled congestion controls built to read the
// sibling subflows with bpf_probe_read_kernel instead of bpf_rdonly_cast:
// the path a kernel without that kfunc (Linux 6.1, Debian 12's own) would
// need. The sources are pkg/cc's, one copy; only the build differs
// (bpf/include/mptcp.h, MPTCP_PROBE_READ). They are lab instruments, never
// shipped: the goodput bench (pkg/cc, GOODPUT probe=on) measures what that
// path costs per ACK, and the differential test that it decides the same
// (docs/kernels.md).
package probecc

import "embed"

// Objects are the compiled objects, NAME_bpfel.o each, NAME the
// algorithm's name in pkg/algo's table, as pkg/cc embeds its own.
//
//go:embed *_bpfel.o
var Objects embed.FS
