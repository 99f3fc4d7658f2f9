// SPDX-License-Identifier: Apache-2.0

// Package structops registers a BPF struct_ops object (a congestion
// control, a packet scheduler) with the kernel so that it outlives the
// loading process, and unregisters it: the one way pkg/cc and pkg/sched
// pin and unpin. It also reads an object's decision trace ring buffer.
//
// A registration is a directory under a pin root holding the struct_ops
// link ("link") and the maps user space reads; while the link is pinned
// the kernel keeps the object registered.
package structops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// SetName renames the object in the struct_ops map's initial value (its
// `name` member, 16 bytes with the NUL in every ops the kernel has) and
// returns the map's name in the spec.
func SetName(spec *ebpf.CollectionSpec, name string) (string, error) {
	for mapName, ms := range spec.Maps {
		if ms.Type != ebpf.StructOpsMap {
			continue
		}
		st, ok := ms.Value.(*btf.Struct)
		if !ok || len(ms.Contents) != 1 {
			return "", fmt.Errorf("struct_ops map %s has an unexpected layout", mapName)
		}
		data, ok := ms.Contents[0].Value.([]byte)
		if !ok {
			return "", fmt.Errorf("struct_ops map %s has no initial value", mapName)
		}
		for _, m := range st.Members {
			if m.Name != "name" {
				continue
			}
			off := int(m.Offset.Bytes())
			field := data[off : off+16]
			clear(field)
			copy(field, name)
			return mapName, nil
		}
		return "", fmt.Errorf("struct_ops map %s has no name member", mapName)
	}
	return "", errors.New("object has no struct_ops map")
}

// Object is one algorithm's BPF object as Load needs it.
type Object struct {
	Algo   string                               // the algorithm's name, for messages
	Spec   func() (*ebpf.CollectionSpec, error) // the compiled object
	Params any                                  // written at key 0 of its "params" map
	Maps   []string                             // maps pinned beside the link
	// Build is what made it, pinned beside it (Load fills in the ABI).
	Build Build
}

// Load loads obj into the kernel, writes its parameters, and registers it
// under name, pinned in dir (see Register). A verifier rejection is
// reported with the verifier's log; a kernel without struct_ops support
// leaves ebpf.ErrNotSupported in the chain.
func Load(obj Object, name, dir string) error {
	spec, err := obj.Spec()
	if err != nil {
		return fmt.Errorf("reading the %s object: %w", obj.Algo, err)
	}
	opsName, err := SetName(spec, name)
	if err != nil {
		return err
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return fmt.Errorf("the kernel's verifier rejected %s: %+v", obj.Algo, ve)
		}
		return fmt.Errorf("loading %s: %w", obj.Algo, err)
	}
	defer coll.Close()
	if err := coll.Maps["params"].Put(uint32(0), obj.Params); err != nil {
		return fmt.Errorf("writing parameters: %w", err)
	}
	b := obj.Build
	if b.ABI, err = ABIHash(spec, obj.Maps); err != nil {
		return err
	}
	if err := Register(coll, opsName, dir, obj.Maps, b); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// ReadParams reads the parameters (key 0 of the "params" map) of the
// registration pinned in dir into v.
func ReadParams(dir string, v any) error {
	m, err := ebpf.LoadPinnedMap(filepath.Join(dir, "params"), &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("opening its parameters: %w", err)
	}
	defer m.Close()
	if err := m.Lookup(uint32(0), v); err != nil {
		return fmt.Errorf("reading its parameters: %w", err)
	}
	return nil
}

// Register attaches the struct_ops map opsMap of coll and pins the link,
// the named maps and the build record in dir, which must not exist yet.
// Either all of it is in place when it returns nil, or none of it (the
// object is unregistered again when coll and the link close).
func Register(coll *ebpf.Collection, opsMap, dir string, maps []string, b Build) (err error) {
	l, err := link.AttachStructOps(link.StructOpsOptions{Map: coll.Maps[opsMap]})
	if err != nil {
		return fmt.Errorf("registering with the kernel: %w", err)
	}
	defer l.Close() // the pin keeps it; without a pin, this unregisters it

	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("creating pin directory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = l.Unpin()
			_ = os.RemoveAll(dir)
		}
	}()
	for _, m := range maps {
		if err := coll.Maps[m].Pin(filepath.Join(dir, m)); err != nil {
			return fmt.Errorf("pinning %s: %w", m, err)
		}
	}
	if err := writeBuild(dir, b); err != nil {
		return err
	}
	if err := l.Pin(filepath.Join(dir, "link")); err != nil {
		return fmt.Errorf("pinning the struct_ops link: %w", err)
	}
	return nil
}

// Unregister removes the registration pinned in dir and, when that was
// the last one, its root. It waits up to 5 s for registered to turn false
// (the kernel frees the link a moment later), and fails if it does not:
// another process then holds the link.
func Unregister(dir string, registered func() bool) error {
	if l, err := link.LoadPinnedLink(filepath.Join(dir, "link"), nil); err == nil {
		// Detach unregisters now, even if another process still holds a
		// file descriptor of the link; older kernels lack it for
		// struct_ops and then the last close unregisters.
		_ = l.Unpin()
		_ = l.Detach()
		_ = l.Close()
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	kernel.RemoveEmptyRoot(filepath.Dir(dir)) // only once nothing else is registered
	if !WaitUnregistered(registered) {
		return fmt.Errorf("%s is still registered after its link was removed: another process holds it", filepath.Base(dir))
	}
	return nil
}

// WaitUnregistered waits up to 5 s for registered to turn false (the
// kernel frees a struct_ops link a moment after its last reference goes)
// and says whether it did.
func WaitUnregistered(registered func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); registered() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return !registered()
}
