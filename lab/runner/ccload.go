// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// LoadedCC is one of our congestion controls loaded for a run.
type LoadedCC struct {
	Spec   string `json:"spec"` // as written in the scenario, e.g. olia+lisa
	Name   string `json:"kernel_name"`
	Algo   string `json:"algo"`
	LISA   bool   `json:"lisa"`
	Pacing bool   `json:"pacing,omitempty"`
	Target string `json:"rsf_target,omitempty"`
	m      *ebpf.Map
}

// CCSet is the congestion controls a run loaded; Unload removes them.
type CCSet struct {
	root   string
	loaded []*LoadedCC
	bySpec map[string]*LoadedCC
}

// LoadCCs loads every spec under a unique name in the run's pin root. On
// failure what was loaded is unloaded again.
func LoadCCs(id RunID, specs []scenario.CCSpec) (*CCSet, error) {
	s := &CCSet{root: id.PinRoot(), bySpec: map[string]*LoadedCC{}}
	used := map[string]bool{}
	for _, sp := range specs {
		if _, ok := s.bySpec[sp.String()]; ok {
			continue
		}
		a, err := cc.Lookup(sp.Algo)
		if err != nil {
			_ = s.Unload()
			return nil, err
		}
		p, err := cc.ParseParams(cc.ParamInput{Algo: sp.Algo, LISA: sp.LISA, Pacing: sp.Pacing, RSFTarget: sp.RSFTarget, RSFTargetSet: sp.RSFTarget != 0})
		if err != nil {
			_ = s.Unload()
			return nil, fmt.Errorf("%s: %w", sp, err)
		}
		base := ccIDPrefix + string(id) + "_" + sp.Algo
		if sp.LISA {
			base += "l"
		}
		if sp.Pacing {
			base += "p"
		}
		name := base
		for n := 2; used[name]; n++ {
			name = base + strconv.Itoa(n)
		}
		used[name] = true
		if err := cc.Load(a, cc.Options{Name: name, PinRoot: s.root, Params: p}); err != nil {
			_ = s.Unload()
			return nil, fmt.Errorf("loading %s as %s: %w", sp, name, err)
		}
		l := &LoadedCC{Spec: sp.String(), Name: name, Algo: sp.Algo, LISA: sp.LISA, Pacing: sp.Pacing}
		if a.ReadsParam(cc.ParamRSFTarget) {
			l.Target = p.RSFTarget.String()
		}
		s.loaded = append(s.loaded, l)
		s.bySpec[sp.String()] = l
		m, err := cc.OpenSubflows(s.root, name)
		if err != nil {
			_ = s.Unload()
			return nil, err
		}
		l.m = m
	}
	return s, nil
}

// KernelName is the name a flow's socket selects for spec.
func (s *CCSet) KernelName(spec scenario.CCSpec) string {
	if !spec.Ours() {
		return spec.Name
	}
	if l := s.bySpec[spec.String()]; l != nil {
		return l.Name
	}
	return ""
}

// Loaded lists what was loaded.
func (s *CCSet) Loaded() []*LoadedCC { return s.loaded }

// readBPF returns every subflow in the maps of the loaded CCs, and an error
// naming those that could not be read (the stats.Source policy).
func (s *CCSet) readBPF() ([]stats.Subflow, error) {
	src := make(stats.Maps, 0, len(s.loaded))
	for _, l := range s.loaded {
		src = append(src, stats.Map{CC: l.Name, Algo: l.Algo, Map: l.m})
	}
	snap, err := src.Read()
	return snap.Subflows, err
}

// Unload unregisters everything and removes the pins.
func (s *CCSet) Unload() error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, l := range s.loaded {
		if l.m != nil {
			l.m.Close()
			l.m = nil
		}
		if err := cc.Unload(l.Name, s.root); err != nil && !errors.Is(err, cc.ErrNotLoaded) {
			errs = append(errs, err)
		}
	}
	s.loaded = nil
	// The run's pin directory and the lab's base, each only when empty:
	// another run may still use the base.
	_ = os.Remove(s.root)
	_ = os.Remove(PinBase)
	return errors.Join(errs...)
}

// checkKernelCCs fails, naming the flow, for kernel congestion controls the
// kernel does not offer.
func checkKernelCCs(f *scenario.File) error {
	have, err := cc.Registered()
	if err != nil {
		return err
	}
	ok := map[string]bool{}
	for _, n := range have {
		ok[n] = true
	}
	var errs []error
	seen := map[string]bool{}
	for _, c := range f.Cases {
		for _, fl := range c.Scenario.Flows {
			if fl.CC.Ours() || ok[fl.CC.Name] || seen[fl.CC.Name] {
				continue
			}
			seen[fl.CC.Name] = true
			errs = append(errs, fmt.Errorf("%s: flows.%s.cc: the kernel has no congestion control %q (it has: %s; the lab loads: %s)",
				f.Path, fl.Name, fl.CC.Name, strings.Join(have, " "), strings.Join(cc.Names(), " ")))
		}
	}
	return errors.Join(errs...)
}
