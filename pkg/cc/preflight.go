// SPDX-License-Identifier: Apache-2.0

package cc

import (
	"errors"
	"fmt"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
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
	ErrAlreadyLoaded  = errors.New("already loaded")
	ErrNotLoaded      = errors.New("not loaded")
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
