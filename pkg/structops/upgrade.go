// SPDX-License-Identifier: Apache-2.0

package structops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
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

// Upgrade replaces the programs of the registration pinned in dir (one of
// f's) with obj's, in place: its struct_ops link is updated to a new
// struct_ops map (BPF_LINK_UPDATE), under the same name, and the new
// programs use the registration's pinned maps (obj.Maps) instead of new ones, so every
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
// still holds the old programs. A kernel whose struct_ops subsystem has no
// update operation (the MPTCP scheduler hook) answers EOPNOTSUPP:
// ErrNoLinkUpdate.
func (f *Family) Upgrade(obj Object, dir string, build Build, prepare Prepare) (old, now Build, err error) {
	n, err := f.loadOnPins(obj, dir, build, prepare)
	if err != nil {
		return n.old, n.build, err
	}
	defer n.close()
	l, err := link.LoadPinnedLink(filepath.Join(dir, "link"), nil)
	if err != nil {
		return n.old, n.build, fmt.Errorf("opening %s's struct_ops link: %w", n.name, err)
	}
	defer l.Close()
	if err := updateStructOpsLink(l, n.coll.Maps[n.opsName]); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return n.old, n.build, fmt.Errorf("%s: %w: %w", n.name, ErrNoLinkUpdate, err)
		}
		return n.old, n.build, fmt.Errorf("replacing %s's programs: %w", n.name, err)
	}
	if err := writeBuild(dir, n.build); err != nil {
		return n.old, n.build, fmt.Errorf("%s runs the new build, but its record was not updated: %w", n.name, err)
	}
	return n.old, n.build, nil
}

// Prepare adjusts a new build's object before an upgrade loads it,
// knowing the old build and the new generation.
type Prepare func(spec *ebpf.CollectionSpec, old Build, gen uint8) error

// Replaced is what Replace did.
type Replaced struct {
	Old, New Build
	// InPlace: the kernel updated the link (as Upgrade). Otherwise Refused
	// is its answer to the update, and the name was re-registered: Window
	// is how long it was not registered.
	InPlace bool
	Refused error
	Window  time.Duration
}

// Replace replaces the programs of the registration pinned in dir (one of
// f's) with obj's: in place as Upgrade does where the kernel updates the
// link, and where it answers EOPNOTSUPP (a struct_ops subsystem without an
// update operation: the MPTCP scheduler hook) by re-registering: the old
// link is detached (the name leaves the kernel's list) and the new build,
// already loaded and verified on the registration's pinned maps, is
// registered under the same name at once, its link pinned over the old
// one. Sockets already open keep the old programs to their end, as at an
// unload (the kernel holds the old struct_ops map while a socket uses
// it), and share the pinned maps with the new ones. A socket created in
// the window gets what the kernel gives for a name it does not have.
//
// When it fails before the detach, nothing changed; after it, the error
// says what is left.
func (f *Family) Replace(obj Object, dir string, build Build, prepare Prepare) (r Replaced, err error) {
	n, err := f.loadOnPins(obj, dir, build, prepare)
	r.Old, r.New = n.old, n.build
	if err != nil {
		return r, err
	}
	defer n.close()
	pin := filepath.Join(dir, "link")
	l, err := link.LoadPinnedLink(pin, nil)
	if err != nil {
		return r, fmt.Errorf("opening %s's struct_ops link: %w", n.name, err)
	}
	defer l.Close()
	ops := n.coll.Maps[n.opsName]
	r.Refused = updateStructOpsLink(l, ops)
	switch {
	case r.Refused == nil:
		r.InPlace = true
	case !errors.Is(r.Refused, unix.EOPNOTSUPP):
		return r, fmt.Errorf("replacing %s's programs: %w", n.name, r.Refused)
	default:
		lost := func(what string, err error) error {
			return fmt.Errorf("%s the new build of %s: %w; %s is no longer registered (open connections keep the old build): `"+f.UnloadCmd+"` and load it again", what, n.name, err, n.name, n.name)
		}
		start := time.Now()
		if err := l.Detach(); err != nil {
			return r, fmt.Errorf("unregistering the old build of %s: %w (nothing changed)", n.name, err)
		}
		nl, err := link.AttachStructOps(link.StructOpsOptions{Map: ops})
		r.Window = time.Since(start)
		if err != nil {
			return r, lost("registering", err)
		}
		defer nl.Close()    // the pin keeps it
		tmp := pin + "_new" // bpffs refuses names with a dot
		_ = os.Remove(tmp)
		if err := nl.Pin(tmp); err != nil {
			return r, lost("pinning the link of", err)
		}
		if err := os.Rename(tmp, pin); err != nil {
			_ = nl.Unpin()
			return r, lost("pinning the link of", err)
		}
	}
	if err := writeBuild(dir, n.build); err != nil {
		return r, fmt.Errorf("%s runs the new build, but its record was not updated: %w", n.name, err)
	}
	return r, nil
}

// newBuild is a new build of a registration, loaded on its pinned maps
// and not yet registered.
type newBuild struct {
	name, opsName string
	old, build    Build
	coll          *ebpf.Collection
}

func (n newBuild) close() { n.coll.Close() }

// loadOnPins loads obj on the pinned maps of the registration in dir, as
// the next generation of its build: what Upgrade and Replace register.
func (f *Family) loadOnPins(obj Object, dir string, build Build, prepare Prepare) (n newBuild, err error) {
	n.name, n.build = filepath.Base(dir), build
	name := n.name
	old, recorded, err := ReadBuild(dir)
	n.old = old
	if err != nil {
		return n, err
	}
	spec, err := obj.Spec()
	if err != nil {
		return n, fmt.Errorf("reading the %s object: %w", obj.Algo, err)
	}
	if n.build.ABI, err = ABIHash(spec, obj.Maps); err != nil {
		return n, err
	}
	if recorded && old.ABI != n.build.ABI {
		return n, fmt.Errorf("%s: %w (pinned %s, this build %s): `"+f.UnloadCmd+"` and load it again; connections keep the programs they run", name, ErrABIChanged, old.ABI, n.build.ABI, name)
	}
	if old.Generation == 255 {
		return n, fmt.Errorf("%s has been upgraded in place 255 times: unload and load it again to reset its generation", name)
	}
	n.build.Generation = old.Generation + 1

	if n.opsName, err = SetName(spec, name); err != nil {
		return n, err
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
			return n, fmt.Errorf("opening %s's pinned %s: %w", name, m, err)
		}
		repl[m] = pinned
		ms := spec.Maps[m]
		if pinned.Type() != ms.Type || pinned.KeySize() != ms.KeySize || pinned.ValueSize() != ms.ValueSize {
			return n, fmt.Errorf("%s: %w (its %s map is %s %d/%d, this build's %s %d/%d)", name, ErrABIChanged, m,
				pinned.Type(), pinned.KeySize(), pinned.ValueSize(), ms.Type, ms.KeySize, ms.ValueSize)
		}
		ms.MaxEntries = pinned.MaxEntries()
		ms.Flags = pinned.Flags()
	}
	if prepare != nil {
		if err := prepare(spec, old, n.build.Generation); err != nil {
			return n, err
		}
	}
	n.coll, err = ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: repl})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return n, fmt.Errorf("the kernel's verifier rejected %s: %+v", obj.Algo, ve)
		}
		return n, fmt.Errorf("loading %s: %w", obj.Algo, err)
	}
	return n, nil
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
