// SPDX-License-Identifier: Apache-2.0

package cc

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
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
func (l Loaded) Current() bool {
	b := ThisBuild()
	return l.BuildRecorded && l.Build.Version == b.Version && l.Build.Commit == b.Commit
}

// List returns what is loaded under root, sorted by name.
func List(root string) ([]Loaded, error) {
	if root == "" {
		root = DefaultPinRoot
	}
	dirs, err := kernel.PinDirs(root)
	if err != nil {
		return nil, err
	}
	var out []Loaded
	for _, name := range dirs {
		l, err := inspect(root, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func inspect(root, name string) (Loaded, error) {
	dir := filepath.Join(root, name)
	l := Loaded{Name: name, PinDir: dir, Registered: IsRegistered(name)}

	var raw abi.CCParams
	if err := structops.ReadParams(dir, &raw); err != nil {
		return l, err
	}
	l.Params = paramsOf(raw)
	if a, ok := ByID(raw.Algo); ok {
		l.Algo = a.Name
	}
	var err error
	if l.Build, l.BuildRecorded, err = structops.ReadBuild(dir); err != nil {
		return l, err
	}
	// A registration from before the counter existed has no pin: 0.
	if m, err := ebpf.LoadPinnedMap(filepath.Join(dir, "untracked"), &ebpf.LoadPinOptions{ReadOnly: true}); err == nil {
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
	if root == "" {
		root = DefaultPinRoot
	}
	m, err := ebpf.LoadPinnedMap(filepath.Join(root, name, what), nil)
	if err != nil {
		return nil, fmt.Errorf("opening %s of %s: %w", what, name, err)
	}
	return m, nil
}

// SetParams changes the parameters of a loaded congestion control; running
// subflows see them on their next ACK.
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
	return m.Put(uint32(0), p.raw(raw.Algo))
}
