// SPDX-License-Identifier: Apache-2.0

// Package algo is the one table of the algorithms this project ships: the
// coupled congestion controls (bpf/cc/) and the packet schedulers
// (bpf/sched/), each with its name, id, summary, parameters and Go
// reference model. Each model registers its algorithm from its own file
// (pkg/model/NAME.go, pkg/schedmodel/NAME.go), as node_exporter's
// collectors do; everything that lists algorithms (the CLI, the daemon's
// config, the scenario language, the loaders, the docs checks, the
// differential tests) iterates this table, so an algorithm is declared
// once.
//
// The ids are stable: they are in the pinned params maps and in every
// subflow id (a congestion control's id is the top byte) of running
// systems, and `mptcp-cc upgrade` relies on them. The loader gives the BPF
// object its id at load time (the object's const volatile mpcc_algo_id or
// mpsch_algo_id), so the BPF side has no list of its own.
//
// The package imports nothing of the project and no kernel code.
package algo

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Kind says what an algorithm is.
type Kind int

const (
	CC        Kind = iota // a coupled congestion control (tcp_congestion_ops)
	Scheduler             // an MPTCP packet scheduler (mptcp_sched_ops)
)

func (k Kind) String() string {
	switch k {
	case CC:
		return "congestion control"
	case Scheduler:
		return "scheduler"
	}
	return fmt.Sprintf("kind %d", int(k))
}

// MaxID is the largest id: a congestion control's id is the top byte of
// every subflow id it hands out (bpf/include/cc_skel.h).
const MaxID = 255

// Info is one algorithm.
type Info struct {
	Name    string // as given to --algo, and the file name of its BPF and model
	Kind    Kind
	ID      uint32 // stable, 1 to MaxID, unique within the kind
	Summary string
	// Coupled (congestion controls) is what the exported coupled quantity
	// is (the subflow record's coupled field).
	Coupled string
	// DelayBased (congestion controls) marks an algorithm that backs off
	// on queueing delay before any loss, as Vegas does. Next to loss-based
	// TCP on a shared drop-tail queue it takes less than one TCP share by
	// design (it yields the queue the loss-based flow fills), so RFC 6356's
	// "no less than one TCP flow" is not what it is checked against.
	DelayBased bool
	// Params (congestion controls) are the load-time parameters of its own
	// it reads, of those only some algorithms read (pkg/cc's Param names;
	// the other parameters every algorithm reads).
	Params []string
	// Model constructs the Go reference model: a func() model.Algorithm
	// for a congestion control, a func(schedmodel.Args)
	// schedmodel.Scheduler for a scheduler (those packages convert it).
	Model any
}

// Reads says whether the algorithm reads the parameter p.
func (i Info) Reads(p string) bool { return slices.Contains(i.Params, p) }

// Readers lists, sorted, the algorithms of a kind that read the parameter p.
func Readers(k Kind, p string) []string {
	var n []string
	for _, i := range All(k) {
		if i.Reads(p) {
			n = append(n, i.Name)
		}
	}
	sort.Strings(n)
	return n
}

var (
	mu    sync.RWMutex
	table = map[Kind][]Info{}
)

// Register adds an algorithm to the table. It panics on a name or an id
// already taken within the kind, or an entry without a name, a valid id or
// a model: these are programming errors, found by any test at start-up.
func Register(i Info) {
	if i.Name == "" || i.ID == 0 || i.ID > MaxID || i.Model == nil {
		panic(fmt.Sprintf("algo.Register(%+v): an algorithm needs a name, an id from 1 to %d and a model", i, MaxID))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, o := range table[i.Kind] {
		if o.Name == i.Name || o.ID == i.ID {
			panic(fmt.Sprintf("algo.Register: %s %q (id %d) collides with %q (id %d)", i.Kind, i.Name, i.ID, o.Name, o.ID))
		}
	}
	i.Params = slices.Clone(i.Params)
	table[i.Kind] = append(table[i.Kind], i)
	sort.Slice(table[i.Kind], func(a, b int) bool { return table[i.Kind][a].ID < table[i.Kind][b].ID })
}

// All returns the algorithms of a kind in the order of their ids (stable:
// the order they were added to the project in).
func All(k Kind) []Info {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(table[k])
}

// Names lists the names of a kind's algorithms, in the order of All.
func Names(k Kind) []string {
	var n []string
	for _, i := range All(k) {
		n = append(n, i.Name)
	}
	return n
}

// Lookup finds an algorithm by name; the error lists the ones that exist.
func Lookup(k Kind, name string) (Info, error) {
	for _, i := range All(k) {
		if i.Name == name {
			return i, nil
		}
	}
	noun, names := "scheduler", Names(k)
	if k == CC { // `unknown algorithm`, sorted: what the CLI always said
		noun = "algorithm"
		sort.Strings(names)
	}
	return Info{}, fmt.Errorf("unknown %s %q: choose one of %s", noun, name, strings.Join(names, ", "))
}

// ByID finds an algorithm by its id.
func ByID(k Kind, id uint32) (Info, bool) {
	for _, i := range All(k) {
		if i.ID == id {
			return i, true
		}
	}
	return Info{}, false
}
