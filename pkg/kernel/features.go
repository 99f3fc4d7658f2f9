// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"errors"
	"os"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// Features is what this kernel offers the project, as `mptcp-cc version`
// reports it.
type Features struct {
	Release string `json:"release"`
	// BTF: /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF), which CO-RE
	// objects and struct_ops need.
	BTF bool `json:"btf"`
	// CCStructOps: BPF programs can register a tcp_congestion_ops
	// (Linux 6.4+ for the links this project pins).
	CCStructOps bool `json:"tcp_congestion_ops_struct_ops"`
	// MPTCP: the kernel has MPTCP and it is enabled in this namespace.
	MPTCP bool `json:"mptcp"`
	// SchedStructOps: BPF programs can register an MPTCP packet scheduler
	// (mptcp_sched_ops). Only kernels built from mptcp_net-next's export
	// branch have it; no released kernel does (checked through 7.3).
	SchedStructOps bool `json:"mptcp_sched_struct_ops"`
	// Err says why BTF could not be read, if it could not.
	Err string `json:"error,omitempty"`
}

// struct_ops registrations appear in the kernel's BTF as
// bpf_struct_ops_<name> (the kernel's BPF_STRUCT_OPS_TYPE); that is how
// bpftool and libbpf find them too.
const (
	ccStructOps    = "bpf_struct_ops_tcp_congestion_ops"
	schedStructOps = "bpf_struct_ops_mptcp_sched_ops"
)

// Probe reads the kernel's features. It needs no privileges.
func Probe() Features {
	var f Features
	f.Release = Release()
	if b, err := os.ReadFile("/proc/sys/net/mptcp/enabled"); err == nil {
		f.MPTCP = strings.TrimSpace(string(b)) == "1"
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		f.Err = err.Error()
		return f
	}
	f.BTF = true
	f.CCStructOps = hasType(spec, ccStructOps)
	f.SchedStructOps = hasType(spec, schedStructOps)
	return f
}

func hasType(spec *btf.Spec, name string) bool {
	_, err := spec.AnyTypeByName(name)
	return err == nil || !errors.Is(err, btf.ErrNotFound)
}
