// SPDX-License-Identifier: Apache-2.0

package cc

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf/btf"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// Errors callers can test for (errors.Is).
var (
	ErrNotRoot        = kernel.ErrNotRoot
	ErrNoBTF          = errors.New("the kernel has no BTF (/sys/kernel/btf/vmlinux): build it with CONFIG_DEBUG_INFO_BTF=y (Linux 5.4 or newer)")
	ErrNoStructOps    = errors.New("the kernel cannot load BPF congestion controls (no bpf_struct_ops_tcp_congestion_ops in its BTF): it needs CONFIG_BPF_JIT and BPF struct_ops for TCP, Linux 6.4 or newer for struct_ops links")
	ErrAlreadyLoaded  = errors.New("already loaded")
	ErrNotLoaded      = errors.New("not loaded")
	ErrNameRegistered = errors.New("a congestion control of that name is already registered")
)

// DefaultPinRoot is where loaded algorithms are pinned unless told otherwise.
const DefaultPinRoot = "/sys/fs/bpf/mptcp-cc"

// checkKernel fails with a message naming the missing kernel feature.
func checkKernel() error {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return ErrNoBTF
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoBTF, err)
	}
	if _, err := spec.AnyTypeByName("bpf_struct_ops_tcp_congestion_ops"); err != nil {
		return ErrNoStructOps
	}
	return nil
}

// Registered lists the congestion controls the kernel currently offers.
func Registered() ([]string, error) { return kernel.CongestionControls() }

// IsRegistered reports whether the kernel offers a congestion control by that name.
func IsRegistered(name string) bool { return kernel.HasCongestionControl(name) }

// validName follows the kernel: TCP_CA_NAME_MAX is 16 bytes with the NUL.
func validName(name string) error {
	if len(name) == 0 || len(name) > 15 {
		return fmt.Errorf("congestion control name %q must be 1 to 15 characters", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("congestion control name %q: use only a-z, 0-9, '_' and '-'", name)
		}
	}
	return nil
}
