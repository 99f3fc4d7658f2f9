// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cilium/ebpf"
)

// ProgramRun is the kernel's run-time accounting of one of a scheduler's
// programs (bpf_prog_info run_cnt and run_time_ns). The kernel counts only
// while BPF statistics are enabled (kernel.bpf_stats_enabled=1, or a
// process holding ebpf.EnableStats); the time is measured around each call
// by the struct_ops trampoline, so it includes the skeleton's snapshot of
// the subflows as well as the algorithm.
type ProgramRun struct {
	Runs    uint64
	Runtime time.Duration
}

// PerRun is the mean time of one call, 0 if there was none.
func (p ProgramRun) PerRun() time.Duration {
	if p.Runs == 0 {
		return 0
	}
	return p.Runtime / time.Duration(p.Runs)
}

// The struct_ops programs of bpf/include/sched_skel.h whose cost is the
// scheduler's: the kernel calls them for every scheduling decision.
var decisionPrograms = []string{"sched_get_send", "sched_get_retrans"}

// RunStats returns the run-time accounting of the decision programs
// (sched_get_send, sched_get_retrans) of the scheduler loaded as name
// under root. They are found as the struct_ops programs that use the
// scheduler's pinned params map, so schedulers loaded twice under two
// names are told apart.
func RunStats(root, name string) (map[string]ProgramRun, error) {
	if root == "" {
		root = DefaultPinRoot
	}
	if err := family.ValidName(name); err != nil {
		return nil, err
	}
	params, err := ebpf.LoadPinnedMap(filepath.Join(root, name, "params"), &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("%s: opening its parameters: %w", name, err)
	}
	defer params.Close()
	mi, err := params.Info()
	if err != nil {
		return nil, err
	}
	paramsID, ok := mi.ID()
	if !ok {
		return nil, errors.New("the kernel gives no map IDs")
	}
	out := map[string]ProgramRun{}
	for id := ebpf.ProgramID(0); ; {
		id, err = ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing BPF programs: %w", err)
		}
		run, name, err := programRun(id, paramsID)
		if err != nil {
			return nil, err
		}
		if name != "" {
			out[name] = run
		}
	}
	for _, p := range decisionPrograms {
		if _, ok := out[p]; !ok {
			return out, fmt.Errorf("%s: no %s program found using its params map", name, p)
		}
	}
	return out, nil
}

// programRun returns the accounting of program id and its name if it is
// a decision program using the params map paramsID ("" otherwise).
func programRun(id ebpf.ProgramID, paramsID ebpf.MapID) (ProgramRun, string, error) {
	prog, err := ebpf.NewProgramFromID(id)
	if errors.Is(err, os.ErrNotExist) {
		return ProgramRun{}, "", nil // unloaded since it was listed
	}
	if err != nil {
		return ProgramRun{}, "", fmt.Errorf("opening BPF program %d: %w", id, err)
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		return ProgramRun{}, "", fmt.Errorf("BPF program %d: %w", id, err)
	}
	maps, _ := info.MapIDs()
	if info.Type != ebpf.StructOps || !slices.Contains(decisionPrograms, info.Name) || !slices.Contains(maps, paramsID) {
		return ProgramRun{}, "", nil
	}
	st, err := prog.Stats()
	if err != nil {
		return ProgramRun{}, "", fmt.Errorf("BPF program %d (%s): %w", id, info.Name, err)
	}
	return ProgramRun{Runs: st.RunCount, Runtime: st.Runtime}, info.Name, nil
}
