// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// ErrNoHook names what is missing and which kernel brings it. It is the
// kernel preflight's error for the feature, so one errors.Is target serves
// both.
var ErrNoHook = kernel.ErrNoSchedHook

// More errors callers can test for (errors.Is).
var (
	ErrNotRoot        = kernel.ErrNotRoot
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
func Available() ([]string, error) { return availableIn("") }

// availableIn is Available in network namespace ns.
func availableIn(ns string) ([]string, error) {
	v, err := kernel.Sysctl(ns, "net.mptcp.available_schedulers")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoMPTCP
	}
	if err != nil {
		return nil, err
	}
	return strings.Fields(v), nil
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
