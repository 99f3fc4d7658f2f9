// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// Loaded is one scheduler pinned under a root.
type Loaded struct {
	Name       string // the name the kernel knows it by
	Algorithm  string // which of ours it is ("" if the params are unreadable)
	Params     Params //
	Registered bool   // the kernel lists it in net.mptcp.available_schedulers
	// Build is what loaded it (or last upgraded it), when BuildRecorded:
	// mptcp-cc 0.1.0 recorded none for schedulers.
	Build         structops.Build
	BuildRecorded bool
}

// Current reports whether l runs this binary's build: false when another
// version loaded it (`mptcp-cc sched upgrade` replaces it) or recorded
// none.
func (l Loaded) Current() bool { return structops.Current(l.Build, l.BuildRecorded) }

// List returns the schedulers pinned under root, sorted by name.
func List(root string) ([]Loaded, error) {
	pinned, err := structops.Pinned(family, root, algoOf)
	avail, _ := Available()
	var out []Loaded
	var errs []error
	for _, p := range pinned {
		l, berr := loaded(p, avail)
		if berr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Name, berr))
		}
		out = append(out, l)
	}
	return out, errors.Join(append([]error{err}, errs...)...)
}

func algoOf(r *abi.SchedParams) uint32 { return r.Algo }

// loaded is the Loaded of one pinned registration; avail, the kernel's
// registered schedulers.
func loaded(p structops.PinnedEntry[abi.SchedParams], avail []string) (Loaded, error) {
	l := Loaded{Name: p.Name, Algorithm: p.Algo, Registered: slices.Contains(avail, p.Name)}
	if p.OK {
		l.Params = Params{Trace: p.Params.Trace != 0, Args: p.Params.Arg}
	}
	var err error
	l.Build, l.BuildRecorded, err = structops.ReadBuild(p.Dir)
	return l, err
}

// inspect reads the registration name under root as List does.
func inspect(root, name string) (Loaded, error) {
	p, err := structops.ReadPinned(family, root, name, algoOf)
	if err != nil {
		return Loaded{Name: name, Registered: IsRegistered(name)}, err
	}
	avail, _ := Available()
	return loaded(p, avail)
}

// SubflowStats is what a scheduler gave one subflow, decoded from its
// stats map (struct mpsch_sf_stats, abi.SchedSubflowStats).
type SubflowStats struct {
	Scheduler  string // the loaded scheduler's name
	Token      uint32
	ID         uint32 // the kernel's subflow id within the connection
	Local      netip.AddrPort
	Remote     netip.AddrPort
	Sends      uint64 // get_send decisions that picked it
	Retrans    uint64 // get_retrans decisions that picked it
	BurstBytes uint64 // bytes of burst granted to it
}

// Stats reads the per-subflow counters of every scheduler pinned under root.
func Stats(root string) ([]SubflowStats, error) {
	if root == "" {
		root = DefaultPinRoot
	}
	dirs, err := kernel.PinDirs(root)
	if err != nil {
		return nil, err
	}
	var out []SubflowStats
	var errs []error
	for _, d := range dirs {
		m, err := ebpf.LoadPinnedMap(filepath.Join(root, d, "stats"), &ebpf.LoadPinOptions{ReadOnly: true})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: opening its stats: %w", d, err))
			continue
		}
		var key uint64
		var v abi.SchedSubflowStats
		it := m.Iterate()
		for it.Next(&key, &v) {
			out = append(out, SubflowStats{
				Scheduler: d, Token: v.Token, ID: v.Id,
				Local:  addrPort(v.Family, v.Saddr, v.Sport),
				Remote: addrPort(v.Family, v.Daddr, v.Dport),
				Sends:  v.Sends, Retrans: v.Retrans, BurstBytes: v.BurstBytes,
			})
		}
		if err := it.Err(); err != nil {
			errs = append(errs, fmt.Errorf("%s: reading its stats: %w", d, err))
		}
		m.Close()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Token != out[j].Token {
			return out[i].Token < out[j].Token
		}
		return out[i].ID < out[j].ID
	})
	return out, errors.Join(errs...)
}

func addrPort(family uint16, a [16]byte, port uint16) netip.AddrPort {
	const afInet6 = 10
	if family == afInet6 {
		return netip.AddrPortFrom(netip.AddrFrom16(a).Unmap(), port)
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(a[:4])), port)
}
