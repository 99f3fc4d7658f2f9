// SPDX-License-Identifier: Apache-2.0

package cc

import (
	"fmt"
	"path/filepath"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// Loaded describes one congestion control this project registered.
type Loaded struct {
	Name       string // as the kernel lists it
	Algo       string
	Params     Params
	Registered bool // the kernel lists it (false: pins left behind)
	PinDir     string
	// Untracked counts the subflows that found the subflows map full:
	// they ran the algorithm, but no reader saw them.
	Untracked uint64
	// Build is what loaded it (or last upgraded it in place), when
	// BuildRecorded: mptcp-cc 0.1.0 and earlier recorded none.
	Build         structops.Build
	BuildRecorded bool
}

// Current reports whether l runs this binary's build: false when it was
// loaded by another version (`mptcp-cc upgrade` replaces it) or before
// builds were recorded.
func (l Loaded) Current() bool { return structops.Current(l.Build, l.BuildRecorded) }

// List returns what is loaded under root, sorted by name.
func List(root string) ([]Loaded, error) {
	pinned, err := structops.Pinned(family, root, algoOf)
	if err != nil {
		return nil, err
	}
	var out []Loaded
	for _, p := range pinned {
		l, err := inspectEntry(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		out = append(out, l)
	}
	return out, nil
}

func algoOf(r *abi.CCParams) uint32 { return r.Algo }

func inspect(root, name string) (Loaded, error) {
	p, err := structops.ReadPinned(family, root, name, algoOf)
	if err != nil {
		return Loaded{Name: name, PinDir: p.Dir, Registered: IsRegistered(name)}, err
	}
	return inspectEntry(p)
}

func inspectEntry(p structops.PinnedEntry[abi.CCParams]) (Loaded, error) {
	l := Loaded{Name: p.Name, PinDir: p.Dir, Registered: IsRegistered(p.Name), Algo: p.Algo, Params: paramsOf(p.Params)}
	var err error
	if l.Build, l.BuildRecorded, err = structops.ReadBuild(p.Dir); err != nil {
		return l, err
	}
	// A registration from before the counter existed has no pin: 0.
	if m, err := ebpf.LoadPinnedMap(filepath.Join(p.Dir, "untracked"), &ebpf.LoadPinOptions{ReadOnly: true}); err == nil {
		err = m.Lookup(uint32(0), &l.Untracked)
		m.Close()
		if err != nil {
			return l, fmt.Errorf("reading its untracked-subflow count: %w", err)
		}
	}
	return l, nil
}

// OpenSubflows opens the pinned per-subflow map of a loaded congestion control.
func OpenSubflows(root, name string) (*ebpf.Map, error) {
	return openPinned(root, name, "subflows")
}

// OpenTrace opens the pinned decision trace ring buffer.
func OpenTrace(root, name string) (*ebpf.Map, error) {
	return openPinned(root, name, "trace")
}

// OpenParams opens the pinned parameter map (to change parameters live).
func OpenParams(root, name string) (*ebpf.Map, error) {
	return openPinned(root, name, "params")
}

func openPinned(root, name, what string) (*ebpf.Map, error) {
	return family.OpenPinned(root, name, what)
}

// SetParams changes the parameters of a loaded congestion control; running
// subflows see them on their next ACK (lisa with their record's next
// refresh, within a millisecond of their ACKs: bpf/include/cc_priv.h).
func SetParams(root, name string, p Params) error {
	m, err := OpenParams(root, name)
	if err != nil {
		return err
	}
	defer m.Close()
	var raw abi.CCParams
	if err := m.Lookup(uint32(0), &raw); err != nil {
		return err
	}
	return m.Put(uint32(0), rawParams(p, raw.Algo))
}
