// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"fmt"
	"path/filepath"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/schedmodel"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// TraceReader collects the decisions of a scheduler loaded with
// Params.Trace, in the background until Stop.
type TraceReader = structops.TraceReader[schedmodel.Trace]

// ReadTrace starts collecting from the pinned trace ring buffer of name.
func ReadTrace(root, name string) (*TraceReader, error) {
	if root == "" {
		root = DefaultPinRoot
	}
	m, err := ebpf.LoadPinnedMap(filepath.Join(root, name, "trace"), nil)
	if err != nil {
		return nil, fmt.Errorf("opening the trace of %s: %w", name, err)
	}
	defer m.Close()
	return structops.ReadTrace[schedmodel.Trace](m, "struct mpsch_trace (bpf/include/sched_types.h) and the generated pkg/abi.SchedTrace")
}
