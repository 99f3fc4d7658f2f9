// SPDX-License-Identifier: Apache-2.0

package cc

import (
	"errors"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// Errors callers can test for (errors.Is). A kernel that lacks what the
// congestion controls need fails Load with a *kernel.UnsupportedError,
// which is kernel.ErrUnsupported and the sentinel of each missing feature
// (ErrNoBTF, ErrNoStructOps, kernel.ErrNoStructOpsLink,
// kernel.ErrNoRdonlyCast).
var (
	ErrNotRoot        = kernel.ErrNotRoot
	ErrNoBTF          = kernel.ErrNoBTF
	ErrNoStructOps    = kernel.ErrNoStructOps
	ErrAlreadyLoaded  = structops.ErrAlreadyLoaded
	ErrNotLoaded      = structops.ErrNotLoaded
	ErrNameRegistered = errors.New("a congestion control of that name is already registered")
)

// DefaultPinRoot is where loaded algorithms are pinned unless told otherwise.
const DefaultPinRoot = "/sys/fs/bpf/mptcp-cc"

// checkKernel refuses, naming every missing feature with the Linux version
// that brings it and the remedy, on a kernel the congestion controls cannot
// load on (kernel.NeedLoad).
func checkKernel() error { return kernel.NeedLoad.Check() }

// Registered lists the congestion controls the kernel currently offers.
func Registered() ([]string, error) { return kernel.CongestionControls() }

// IsRegistered reports whether the kernel offers a congestion control by that name.
func IsRegistered(name string) bool { return kernel.HasCongestionControl(name) }
