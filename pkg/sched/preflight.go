// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// Errors callers can test for (errors.Is).
var (
	ErrNotRoot = kernel.ErrNotRoot
	// ErrNoHook names what is missing and which kernel brings it: no
	// released kernel (checked through 7.3) can register a BPF MPTCP
	// scheduler.
	ErrNoHook = errors.New("this kernel has no BPF hook for MPTCP packet schedulers " +
		"(no bpf_struct_ops_mptcp_sched_ops in its BTF; `mptcp-cc version` shows it): " +
		"only a kernel built from the mptcp_net-next development tree's export branch " +
		"has the hook and its kfuncs (net/mptcp/bpf.c), no released Linux (checked through 7.3); " +
		"BPF packet schedulers are experimental (docs/schedulers.md)")
	ErrNoMPTCP        = errors.New("the kernel has no MPTCP, or it is disabled (net.mptcp.enabled=0)")
	ErrAlreadyLoaded  = structops.ErrAlreadyLoaded
	ErrNotLoaded      = structops.ErrNotLoaded
	ErrNameRegistered = errors.New("a scheduler of that name is already registered")
	ErrUnknown        = errors.New("no such scheduler")
)

// DefaultPinRoot is where loaded schedulers are pinned unless told otherwise.
const DefaultPinRoot = "/sys/fs/bpf/mptcp-cc-sched"

// Experimental is what every help text about the BPF schedulers says
// first: they run only on a kernel no release has yet.
const Experimental = "experimental: needs a kernel with the BPF MPTCP scheduler hook (mptcp_net-next's export branch)"

// CheckHook fails with ErrNoHook, which names the missing kernel feature
// and the kernel that has it, unless this kernel can register a BPF MPTCP
// scheduler. It needs no privileges.
// The kernel preflight decides it, as it decides every feature.
func CheckHook() error {
	f := kernel.Probe()
	if !f.BTF {
		return fmt.Errorf("the kernel has no readable BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF=y): %s; and %w", f.Err, ErrNoHook)
	}
	if !f.SchedStructOps {
		return ErrNoHook
	}
	return nil
}

// Available lists the schedulers the kernel offers in the current network
// namespace (net.mptcp.available_schedulers), in its order.
func Available() ([]string, error) {
	b, err := os.ReadFile("/proc/sys/net/mptcp/available_schedulers")
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoMPTCP
	}
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// IsRegistered reports whether the kernel offers a scheduler by that name.
func IsRegistered(name string) bool {
	names, err := Available()
	if err != nil {
		return false
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}
