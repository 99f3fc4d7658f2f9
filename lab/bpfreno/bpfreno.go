// SPDX-License-Identifier: Apache-2.0

// Package bpfreno registers the kernel's own Reno through BPF struct_ops
// (bpf/lab/bpfreno.bpf.c): every callback is a BPF program that calls the
// kernel's Reno function. It is a measuring instrument: against the
// built-in "reno" it isolates what the struct_ops path does, with no
// algorithm of ours in between, for the ssthresh anomaly's arms
// (lab/ssthresh) and the cost bench (pkg/cc).
//
// RegisterFloor registers the same path with an empty cong_avoid, the
// floor of the kernel's run-time accounting for the cost bench.
//
// A registration lives as long as its Reno value: nothing is pinned, and
// Close (or the process's exit) unregisters it.
package bpfreno

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// Reno is one registration.
type Reno struct {
	Name string // the congestion control's name, for setsockopt(TCP_CONGESTION)
	coll *ebpf.Collection
	link link.Link
}

// Register registers the BPF Reno as name (at most 15 bytes, not
// registered yet).
func Register(name string) (*Reno, error) { return register(name, bpfrenoMapBpfreno) }

// RegisterFloor registers, as name, the BPF path with nothing behind
// cong_avoid: its window never grows, so it is for timing that call, not
// for transfers.
func RegisterFloor(name string) (*Reno, error) { return register(name, bpfrenoMapBpfnull) }

// register loads the object's struct_ops map ops, and only it with its
// programs, and registers it as name.
func register(name, ops string) (*Reno, error) {
	if name == "" || len(name) > 15 {
		return nil, fmt.Errorf("bpfreno: name %q: want 1 to 15 bytes (the kernel's TCP_CA_NAME_MAX is 16 with the NUL)", name)
	}
	if kernel.HasCongestionControl(name) {
		return nil, fmt.Errorf("bpfreno: a congestion control named %q is already registered: pick another name", name)
	}
	spec, err := loadBpfreno()
	if err != nil {
		return nil, fmt.Errorf("bpfreno: reading the object: %w", err)
	}
	// Each map's programs share its name's prefix (bpfreno_, bpfnull_).
	for m := range spec.Maps {
		if m != ops && spec.Maps[m].Type == ebpf.StructOpsMap {
			delete(spec.Maps, m)
		}
	}
	for p := range spec.Programs {
		if !strings.HasPrefix(p, ops+"_") {
			delete(spec.Programs, p)
		}
	}
	opsMap, err := structops.SetName(spec, name)
	if err != nil {
		return nil, fmt.Errorf("bpfreno: %w", err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("bpfreno: the kernel's verifier rejected it (it needs BPF struct_ops for tcp_congestion_ops and the tcp_reno_* kfuncs, through a struct_ops link: Linux 6.4 or later): %+v", ve)
		}
		return nil, fmt.Errorf("bpfreno: loading (it needs BPF struct_ops for tcp_congestion_ops and the tcp_reno_* kfuncs, through a struct_ops link: Linux 6.4 or later): %w", err)
	}
	l, err := link.AttachStructOps(link.StructOpsOptions{Map: coll.Maps[opsMap]})
	if err != nil {
		coll.Close()
		return nil, fmt.Errorf("bpfreno: registering %s: %w", name, err)
	}
	return &Reno{Name: name, coll: coll, link: l}, nil
}

// Close unregisters it and waits, up to 5 s, until the kernel no longer
// lists it. Sockets still using it keep running it until they close.
func (r *Reno) Close() error {
	err := r.link.Close()
	r.coll.Close()
	gone := structops.WaitUnregistered(func() bool { return kernel.HasCongestionControl(r.Name) })
	if err == nil && !gone {
		err = fmt.Errorf("bpfreno: %s is still registered 5 s after its link closed", r.Name)
	}
	return err
}
