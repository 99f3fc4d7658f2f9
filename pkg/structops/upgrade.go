// SPDX-License-Identifier: Apache-2.0

package structops

import (
	"errors"
	"fmt"
	"path/filepath"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Errors an upgrade reports (errors.Is).
var (
	// ErrABIChanged: the new build's pinned maps have another layout, so
	// it cannot take over the registration's maps, and the readers of the
	// old ones would misread the new ones.
	ErrABIChanged = errors.New("the maps' layout (ABI) changed between the builds")
	// ErrNoLinkUpdate: the kernel cannot replace a registered struct_ops
	// in place (BPF_LINK_UPDATE on a struct_ops link, Linux 6.4, and a
	// subsystem that implements it: tcp_congestion_ops does).
	ErrNoLinkUpdate = errors.New("the kernel cannot replace the registered programs in place (BPF_LINK_UPDATE of a struct_ops link: Linux 6.4 or newer)")
)

// Upgrade replaces the programs of the registration pinned in dir with
// obj's, in place: its struct_ops link is updated to a new struct_ops map
// (BPF_LINK_UPDATE), under the same name, and the new programs use the
// registration's pinned maps (obj.Maps) instead of new ones, so every
// reader keeps reading the same maps and the parameters stay as they
// were. New sockets get the new programs; a socket that already runs the
// registration keeps the old ones to its end (the kernel holds the old
// struct_ops map while a socket uses it). The new build record, with the
// generation one above the old, replaces the old one; Upgrade returns
// both.
//
// prepare, if not nil, adjusts the new object before it loads, knowing
// the old build and the new generation (the CCs start their subflow ids
// in the new generation's range, so the two builds' ids never collide in
// the shared subflows map).
//
// Nothing changes when it fails: the new object is closed, and the link
// still holds the old programs.
func Upgrade(obj Object, dir string, build Build, prepare func(spec *ebpf.CollectionSpec, old Build, gen uint8) error) (old, now Build, err error) {
	name := filepath.Base(dir)
	old, recorded, err := ReadBuild(dir)
	if err != nil {
		return old, build, err
	}
	spec, err := obj.Spec()
	if err != nil {
		return old, build, fmt.Errorf("reading the %s object: %w", obj.Algo, err)
	}
	if build.ABI, err = ABIHash(spec, obj.Maps); err != nil {
		return old, build, err
	}
	if recorded && old.ABI != build.ABI {
		return old, build, fmt.Errorf("%s: %w (pinned %s, this build %s): `mptcp-cc unload --name %s` and load it again; connections keep the programs they run", name, ErrABIChanged, old.ABI, build.ABI, name)
	}
	if old.Generation == 255 {
		return old, build, fmt.Errorf("%s has been upgraded in place 255 times: unload and load it again to reset its generation", name)
	}
	build.Generation = old.Generation + 1

	opsName, err := SetName(spec, name)
	if err != nil {
		return old, build, err
	}
	// The registration's maps replace the object's own: the same layout
	// (checked by the ABI hash, or for a registration without a build
	// record by the kernel's sizes below) and the size it was loaded with.
	repl := map[string]*ebpf.Map{}
	defer func() {
		for _, m := range repl {
			m.Close()
		}
	}()
	for _, m := range obj.Maps {
		pinned, err := ebpf.LoadPinnedMap(filepath.Join(dir, m), nil)
		if err != nil {
			return old, build, fmt.Errorf("opening %s's pinned %s: %w", name, m, err)
		}
		repl[m] = pinned
		ms := spec.Maps[m]
		if pinned.Type() != ms.Type || pinned.KeySize() != ms.KeySize || pinned.ValueSize() != ms.ValueSize {
			return old, build, fmt.Errorf("%s: %w (its %s map is %s %d/%d, this build's %s %d/%d)", name, ErrABIChanged, m,
				pinned.Type(), pinned.KeySize(), pinned.ValueSize(), ms.Type, ms.KeySize, ms.ValueSize)
		}
		ms.MaxEntries = pinned.MaxEntries()
		ms.Flags = pinned.Flags()
	}
	if prepare != nil {
		if err := prepare(spec, old, build.Generation); err != nil {
			return old, build, err
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: repl})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return old, build, fmt.Errorf("the kernel's verifier rejected %s: %+v", obj.Algo, ve)
		}
		return old, build, fmt.Errorf("loading %s: %w", obj.Algo, err)
	}
	defer coll.Close()

	l, err := link.LoadPinnedLink(filepath.Join(dir, "link"), nil)
	if err != nil {
		return old, build, fmt.Errorf("opening %s's struct_ops link: %w", name, err)
	}
	defer l.Close()
	if err := updateStructOpsLink(l, coll.Maps[opsName]); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return old, build, fmt.Errorf("%s: %w: %v", name, ErrNoLinkUpdate, err)
		}
		return old, build, fmt.Errorf("replacing %s's programs: %w", name, err)
	}
	if err := writeBuild(dir, build); err != nil {
		return old, build, fmt.Errorf("%s runs the new build, but its record was not updated: %w", name, err)
	}
	return old, build, nil
}

// updateStructOpsLink points a struct_ops link at another struct_ops map
// (BPF_LINK_UPDATE with new_map_fd), which cilium/ebpf does not offer.
func updateStructOpsLink(l link.Link, m *ebpf.Map) error {
	fd, ok := l.(interface{ FD() int })
	if !ok {
		return fmt.Errorf("the pinned link (%T) has no file descriptor", l)
	}
	attr := struct {
		linkFD, newMapFD, flags, oldMapFD uint32
	}{linkFD: uint32(fd.FD()), newMapFD: uint32(m.FD())}
	_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_LINK_UPDATE, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return fmt.Errorf("BPF_LINK_UPDATE: %w", errno)
	}
	return nil
}
