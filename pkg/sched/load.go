package sched

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

// Params are the load-time parameters (struct mpsch_params).
type Params struct {
	Trace bool      // emit every decision to the trace ring buffer
	Args  [6]uint32 // the algorithm's tunables; 0 keeps its default (each bpf/sched file lists them)
}

type rawParams struct {
	Trace uint32
	Algo  uint32
	Args  [6]uint32
}

// Options say how to load a scheduler.
type Options struct {
	Name    string // name to register under; default the algorithm's name
	PinRoot string // default DefaultPinRoot
	Params  Params
}

// pinnedMaps are the maps Load pins beside the link.
var pinnedMaps = []string{"params", "stats", "trace"}

// Load registers the scheduler with the kernel and pins it, so it stays
// registered after this process exits. Either everything is in place when
// it returns nil, or nothing is: a failure undoes what was done.
func Load(a Algorithm, opts Options) (err error) {
	name, root := opts.Name, opts.PinRoot
	if name == "" {
		name = a.Name
	}
	if root == "" {
		root = DefaultPinRoot
	}
	if err := validName(name); err != nil {
		return err
	}
	if name == "default" {
		return fmt.Errorf("%q is the kernel's own scheduler: %w; pick another with --name", name, ErrNameRegistered)
	}
	if err := kernel.CheckPrivileges(); err != nil {
		return err
	}
	if err := checkKernel(); err != nil {
		return err
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s is %w (pinned at %s): unload it first with `mptcp-cc sched unload %s`", name, ErrAlreadyLoaded, dir, name)
	}
	if IsRegistered(name) {
		return fmt.Errorf("%q: %w by another program; pick another with --name", name, ErrNameRegistered)
	}
	if err := kernel.EnsureBPFFS(root); err != nil {
		return err
	}

	spec, err := a.Spec()
	if err != nil {
		return fmt.Errorf("reading the %s object: %w", a.Name, err)
	}
	opsName, err := setStructOpsName(spec, name)
	if err != nil {
		return err
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return fmt.Errorf("the kernel's verifier rejected %s: %+v", a.Name, ve)
		}
		return fmt.Errorf("loading %s: %w", a.Name, err)
	}
	defer coll.Close()

	raw := rawParams{Algo: a.ID, Args: opts.Params.Args}
	if opts.Params.Trace {
		raw.Trace = 1
	}
	if err := coll.Maps["params"].Put(uint32(0), raw); err != nil {
		return fmt.Errorf("writing parameters: %w", err)
	}
	l, err := link.AttachStructOps(link.StructOpsOptions{Map: coll.Maps[opsName]})
	if err != nil {
		return fmt.Errorf("registering %s with the kernel: %w", name, err)
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
	for _, m := range pinnedMaps {
		if err := coll.Maps[m].Pin(filepath.Join(dir, m)); err != nil {
			return fmt.Errorf("pinning %s: %w", m, err)
		}
	}
	if err := l.Pin(filepath.Join(dir, "link")); err != nil {
		return fmt.Errorf("pinning the struct_ops link: %w", err)
	}
	return nil
}

// setStructOpsName renames the scheduler in the struct_ops map's initial
// value (its `name` member) and returns the map's name in the spec.
func setStructOpsName(spec *ebpf.CollectionSpec, name string) (string, error) {
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

// Unload unregisters a loaded scheduler and removes its pins. Connections
// that use it keep it until they close (the kernel holds a reference), and
// a namespace whose net.mptcp.scheduler names it gives new connections the
// default scheduler.
func Unload(name, root string) error {
	if root == "" {
		root = DefaultPinRoot
	}
	if err := validName(name); err != nil {
		return err
	}
	if err := kernel.CheckPrivileges(); err != nil {
		return err
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("%s is %w (nothing pinned at %s); `mptcp-cc sched list` shows what is", name, ErrNotLoaded, dir)
	}
	if l, err := link.LoadPinnedLink(filepath.Join(dir, "link"), nil); err == nil {
		_ = l.Unpin()
		_ = l.Detach()
		_ = l.Close()
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	_ = os.Remove(root) // only succeeds once nothing else is loaded
	for deadline := time.Now().Add(5 * time.Second); IsRegistered(name) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if IsRegistered(name) {
		return fmt.Errorf("%s is still registered after its link was removed: another process holds it", name)
	}
	return nil
}
