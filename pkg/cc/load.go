package cc

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

// Params are the load-time parameters every algorithm accepts. They mirror
// struct mpcc_params in bpf/include/cc_types.h.
type Params struct {
	LISA      bool          // LISA linked slow start for joining subflows
	RSFTarget time.Duration // RSF's target queueing delay d (only RSF reads it)
	Trace     bool          // emit every decision to the trace ring buffer
}

// DefaultRSFTarget is RSF's target queueing delay when none is given. The
// seed does not fix d; 10 ms is a queue short enough to mark a path as
// uncontended on WAN paths and long enough that the delay noise of a
// virtualised host (~1 ms) does not trip it. docs/algorithms.md discusses it.
const DefaultRSFTarget = 10 * time.Millisecond

type rawParams struct {
	LISA        uint32
	RSFTargetUs uint32
	Trace       uint32
	Algo        uint32
}

func (p Params) raw(algo uint32) rawParams {
	r := rawParams{RSFTargetUs: uint32(p.RSFTarget / time.Microsecond), Algo: algo}
	if p.LISA {
		r.LISA = 1
	}
	if p.Trace {
		r.Trace = 1
	}
	return r
}

func (r rawParams) params() Params {
	return Params{LISA: r.LISA != 0, Trace: r.Trace != 0, RSFTarget: time.Duration(r.RSFTargetUs) * time.Microsecond}
}

// Options say how to load an algorithm.
type Options struct {
	Name    string // name to register under; default Algorithm.DefaultName()
	PinRoot string // default DefaultPinRoot
	Params  Params
}

// Load registers the algorithm with the kernel and pins it, so it stays
// registered after this process exits. Either everything is in place when it
// returns nil, or nothing is: a failure undoes what was done.
func Load(a Algorithm, opts Options) (err error) {
	name, root := opts.Name, opts.PinRoot
	if name == "" {
		name = a.DefaultName()
	}
	if root == "" {
		root = DefaultPinRoot
	}
	if err := validName(name); err != nil {
		return err
	}
	if opts.Params.RSFTarget < 0 || opts.Params.RSFTarget > time.Hour {
		return fmt.Errorf("RSF target delay %v is out of range (0 to 1h)", opts.Params.RSFTarget)
	}
	if err := kernel.CheckPrivileges(); err != nil {
		return err
	}
	if err := checkKernel(); err != nil {
		return err
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s is %w (pinned at %s): unload it first with `mptcp-cc unload --name %s`", name, ErrAlreadyLoaded, dir, name)
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
		if errors.Is(err, ebpf.ErrNotSupported) {
			return fmt.Errorf("%w: %v", ErrNoStructOps, err)
		}
		return fmt.Errorf("loading %s: %w", a.Name, err)
	}
	defer coll.Close()

	if err := coll.Maps["params"].Put(uint32(0), opts.Params.raw(a.ID)); err != nil {
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
	for _, m := range []string{"subflows", "params", "trace"} {
		if err := coll.Maps[m].Pin(filepath.Join(dir, m)); err != nil {
			return fmt.Errorf("pinning %s: %w", m, err)
		}
	}
	if err := l.Pin(filepath.Join(dir, "link")); err != nil {
		return fmt.Errorf("pinning the struct_ops link: %w", err)
	}
	return nil
}

// setStructOpsName renames the congestion control in the struct_ops map's
// initial value (its `name` member) and returns the map's name in the spec.
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

// Unload unregisters a loaded congestion control and removes its pins.
// Connections that use it keep running: the kernel holds the programs until
// the last socket using them is released.
func Unload(name, root string) error {
	if root == "" {
		root = DefaultPinRoot
	}
	if err := kernel.CheckPrivileges(); err != nil {
		return err
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("%s is %w (nothing pinned at %s); `mptcp-cc list` shows what is", name, ErrNotLoaded, dir)
	}
	l, err := link.LoadPinnedLink(filepath.Join(dir, "link"), nil)
	if err == nil {
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
	_ = os.Remove(root) // only succeeds once nothing else is loaded
	// Unregistering happens when the link is freed, which the kernel may
	// defer briefly: wait so callers see a consistent state.
	for deadline := time.Now().Add(5 * time.Second); IsRegistered(name) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if IsRegistered(name) {
		return fmt.Errorf("%s is still registered after its link was removed: another process holds it", name)
	}
	return nil
}
