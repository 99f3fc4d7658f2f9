// SPDX-License-Identifier: Apache-2.0

package structops

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/algo"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// ObjectSuffix ends the name of every compiled object bpf2go writes
// (NAME_bpfel.o, NAME the algorithm's name in pkg/algo's table).
const ObjectSuffix = "_bpfel.o"

// Family is one kind of struct_ops algorithm as pkg/cc and pkg/sched
// load it: the algorithms of one kind of pkg/algo's table, their compiled
// objects found by name, and the one way they are loaded, pinned, listed
// and unloaded. What differs between the two kinds is data here.
type Family struct {
	Kind    algo.Kind
	Objects fs.FS    // the package's embedded objects, NAME_bpfel.o each
	Root    string   // the default pin root
	Maps    []string // the maps pinned beside the link
	// UnloadCmd and ListCmd are the commands messages point to; UnloadCmd
	// has a %s for the name.
	UnloadCmd, ListCmd string
	Check              func() error // the kernel preflight for loading
	IsRegistered       func(name string) bool
	ErrNameRegistered  error // a name the kernel already has
}

// Errors of Load and Unload, the same for both families (errors.Is).
var (
	ErrAlreadyLoaded = errors.New("already loaded")
	ErrNotLoaded     = errors.New("not loaded")
)

// IDVars are the names of the objects' const volatile id, per kind: the
// skeleton headers declare them (bpf/include/cc_skel.h, sched_skel.h).
var IDVars = map[algo.Kind]string{algo.CC: "mpcc_algo_id", algo.Scheduler: "mpsch_algo_id"}

// PinRoot is root, or the family's default for "".
func (f *Family) PinRoot(root string) string {
	if root == "" {
		return f.Root
	}
	return root
}

// Spec reads the compiled object of a (this binary's, embedded) and gives
// it its id from the table. An object without the id variable is refused:
// it was not built on the skeleton header, or before ids came from the
// table.
func (f *Family) Spec(a algo.Info) (*ebpf.CollectionSpec, error) {
	file, err := f.Objects.Open(a.Name + ObjectSuffix)
	if err != nil {
		return nil, fmt.Errorf("this binary has no BPF object for the %s %q (%v): is there a go:generate line for it, and did `make generate` run?", f.Kind, a.Name, err)
	}
	defer file.Close()
	r, ok := file.(io.ReaderAt)
	if !ok {
		return nil, fmt.Errorf("the object of %s cannot be read at offsets", a.Name)
	}
	spec, err := ebpf.LoadCollectionSpecFromReader(r)
	if err != nil {
		return nil, fmt.Errorf("reading the object of %s: %w", a.Name, err)
	}
	v, ok := spec.Variables[IDVars[f.Kind]]
	if !ok {
		return nil, fmt.Errorf("the object of %s has no %s variable, so it cannot be given its id: build it on the skeleton header and run `make generate`", a.Name, IDVars[f.Kind])
	}
	if err := v.Set(a.ID); err != nil {
		return nil, fmt.Errorf("setting the id of %s: %w", a.Name, err)
	}
	return spec, nil
}

// ObjectNames lists, sorted, the algorithms this binary has an object for.
func (f *Family) ObjectNames() ([]string, error) {
	files, err := fs.Glob(f.Objects, "*"+ObjectSuffix)
	if err != nil {
		return nil, err
	}
	for i, n := range files {
		files[i] = strings.TrimSuffix(n, ObjectSuffix)
	}
	sort.Strings(files)
	return files, nil
}

// ValidName follows the kernel: both TCP_CA_NAME_MAX and
// MPTCP_SCHED_NAME_MAX are 16 bytes with the NUL.
func (f *Family) ValidName(name string) error {
	if len(name) == 0 || len(name) > 15 {
		return fmt.Errorf("%s name %q must be 1 to 15 characters", f.Kind, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("%s name %q: use only a-z, 0-9, '_' and '-'", f.Kind, name)
		}
	}
	return nil
}

// Load registers algorithm a with the kernel under name and pins it in
// root/name, with params at key 0 of its params map; tune, if not nil,
// changes the spec first. Either everything is in place when it returns
// nil, or nothing is: a failure undoes what was done, the pin root
// included if Load made it.
func (f *Family) Load(a algo.Info, name, root string, params any, b Build, tune func(*ebpf.CollectionSpec)) (err error) {
	root = f.PinRoot(root)
	if err := f.ValidName(name); err != nil {
		return err
	}
	if err := kernel.CheckPrivileges(); err != nil {
		return err
	}
	if err := f.Check(); err != nil {
		return err
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s is %w (pinned at %s): unload it first with `"+f.UnloadCmd+"`", name, ErrAlreadyLoaded, dir, name)
	}
	if f.IsRegistered(name) {
		return fmt.Errorf("%q: %w by another program; pick another with --name", name, f.ErrNameRegistered)
	}
	_, statErr := os.Stat(root)
	if err := kernel.EnsureBPFFS(root); err != nil {
		return err
	}
	if os.IsNotExist(statErr) {
		defer func() {
			if err != nil {
				kernel.RemoveEmptyRoot(root) // fails, as it should, if anything is in it
			}
		}()
	}
	spec := func() (*ebpf.CollectionSpec, error) {
		s, err := f.Spec(a)
		if err == nil && tune != nil {
			tune(s)
		}
		return s, err
	}
	err = Load(Object{Algo: a.Name, Spec: spec, Params: params, Maps: f.Maps, Build: b}, name, dir)
	if errors.Is(err, ebpf.ErrNotSupported) {
		// The preflight passed, so this is a feature it does not know:
		// say so, with what `mptcp-cc version` needs to tell it.
		return fmt.Errorf("%w that the preflight did not probe (please report it with `mptcp-cc version --json`): %v", kernel.ErrUnsupported, err)
	}
	return err
}

// Unload unregisters what is pinned as name under root and removes its
// pins. Connections that use it keep running: the kernel holds the
// programs until the last socket using them is released.
func (f *Family) Unload(name, root string) error {
	if err := kernel.CheckPrivileges(); err != nil {
		return err
	}
	dir, err := f.Dir(root, name)
	if err != nil {
		return err
	}
	return Unregister(dir, func() bool { return f.IsRegistered(name) })
}

// Dir is the pin directory of the registration name under root, or
// ErrNotLoaded when nothing is pinned there.
func (f *Family) Dir(root, name string) (string, error) {
	dir := filepath.Join(f.PinRoot(root), name)
	if _, err := os.Stat(dir); err != nil {
		return dir, fmt.Errorf("%s is %w (nothing pinned at %s); `%s` shows what is", name, ErrNotLoaded, dir, f.ListCmd)
	}
	return dir, nil
}

// Pinned lists, sorted by name, the registrations pinned under root with
// their parameters (key 0 of the params map, read into a P) and the
// algorithm idOf's id names in the table ("" for one this build does not
// know). A registration whose parameters cannot be read is listed with OK
// false, and named in the error.
func Pinned[P any](f *Family, root string, idOf func(*P) uint32) ([]PinnedEntry[P], error) {
	root = f.PinRoot(root)
	dirs, err := kernel.PinDirs(root)
	if err != nil {
		return nil, err
	}
	var out []PinnedEntry[P]
	var errs []error
	for _, d := range dirs {
		e, err := ReadPinned(f, root, d, idOf)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

// ReadPinned reads the registration name under root as Pinned does.
func ReadPinned[P any](f *Family, root, name string, idOf func(*P) uint32) (PinnedEntry[P], error) {
	e := PinnedEntry[P]{Name: name, Dir: filepath.Join(f.PinRoot(root), name)}
	if err := ReadParams(e.Dir, &e.Params); err != nil {
		return e, err
	}
	e.OK = true
	if a, ok := algo.ByID(f.Kind, idOf(&e.Params)); ok {
		e.Algo = a.Name
	}
	return e, nil
}

// PinnedEntry is one registration Pinned found.
type PinnedEntry[P any] struct {
	Name   string // the name the kernel knows it by
	Dir    string
	Algo   string // "" if unknown to this build or unreadable
	Params P
	OK     bool // its parameters were read
}

// OpenPinned opens the map pinned as what beside the registration name
// under root.
func (f *Family) OpenPinned(root, name, what string) (*ebpf.Map, error) {
	m, err := ebpf.LoadPinnedMap(filepath.Join(f.PinRoot(root), name, what), nil)
	if err != nil {
		return nil, fmt.Errorf("opening %s of %s: %w", what, name, err)
	}
	return m, nil
}
