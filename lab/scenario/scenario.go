// SPDX-License-Identifier: Apache-2.0

// Package scenario is the lab's scenario language (docs/lab.md,
// testdata/scenarios): it reads a scenario file, checks it strictly (every
// error names the file, the line and the field) and resolves it into one
// Scenario per case (variant x sweep value), and it parses the units
// (ParseRate, ParseSize, durations). It needs no privileges and runs
// nothing: it imports pkg/algo for our algorithms' names, pkg/ccparams
// for the rules of their parameters (as load and the daemon check them),
// and lab/linkem only for the AQM type and its checks, so a link's AQM is
// checked as the emulator will; lab/runner runs what it describes.
package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mptcp-cc/mptcp-cc/lab/linkem"
)

// Scenario is one fully resolved experiment: a network, the congestion
// controls, the flows and what to record. A scenario file yields one
// Scenario per case (variant x sweep value); see File.
type Scenario struct {
	Name        string
	Description string
	Seed        uint64
	Repetitions int
	Timeout     time.Duration // for one repetition of one case
	NoOffload   bool
	Sysctls     []string // set in every host and server namespace
	Links       []Link
	Servers     []Server
	Hosts       []Host
	Flows       []Flow
	Record      Record
}

// Link is an access link; Server.Link uses the same type.
type Link struct {
	Name   string
	Rate   uint64 // bits per second; 0: unlimited
	Delay  time.Duration
	Loss   float64
	Jitter time.Duration
	Queue  Queue
	Trace  string     // absolute path of a mahimahi trace
	AQM    linkem.AQM // the queue's discipline; Queue is its hard limit
}

// Emulated reports whether the link needs the user-space emulator (delay,
// loss, jitter, a trace or an AQM), rather than a veth with tbf.
func (l Link) Emulated() bool {
	return l.Delay > 0 || l.Loss > 0 || l.Jitter > 0 || l.Trace != "" || l.AQM.Kind != linkem.DropTail
}

// Server is a receiving host behind its own link.
type Server struct {
	Name        string
	Link        Link
	MaxSubflows int
}

// Host is a kind of client host; Count namespaces of it are built.
type Host struct {
	Name            string
	Count           int
	Paths           []HostPath
	Endpoints       string        // subflow, fullmesh, none
	PathManager     string        // kernel (endpoints added with ip mptcp) or mptcpd (its addr_adv plugin adds them)
	JoinAfter       time.Duration // 0: endpoints from the start; else added this long into the repetition
	MaxSubflows     int
	AddAddrAccepted int
}

// HostPath is one interface of a host and the access link it crosses,
// and for a chained path the second link it crosses after the first.
type HostPath struct {
	Link      string
	LinkIndex int
	Then      string // "": one link
	ThenIndex int    // -1: one link
	Backup    bool
}

// Name names the path by its links: "wifi", or "x+t" for a chained path.
func (p HostPath) Name() string {
	if p.Then == "" {
		return p.Link
	}
	return p.Link + "+" + p.Then
}

// Flow is a group of identical transfers: Count from every instance of
// host From to server To.
type Flow struct {
	Name      string
	From      string
	Host      int // index into Scenario.Hosts
	To        string
	Server    int // index into Scenario.Servers
	MPTCP     bool
	CC        CCSpec
	Tool      string // xfer or iperf3
	Count     int
	Start     time.Duration
	Bytes     int64         // transfer this much...
	Duration  time.Duration // ...or for this long
	Path      int           // the host path the connection starts on
	Timeout   time.Duration
	IperfArgs []string
}

// Protocol is "mptcp" or "tcp".
func (f Flow) Protocol() string {
	if f.MPTCP {
		return "mptcp"
	}
	return "tcp"
}

// CCSpec names a congestion control: a kernel one (Algo empty; Name as the
// kernel lists it) or one of this project's algorithms, which the lab loads
// under a unique name with these parameters.
type CCSpec struct {
	Name      string // kernel name (built-in), or the algorithm
	Algo      string // lia, olia, balia, rsf; "" for a kernel CC
	LISA      bool
	Pacing    bool
	RSFTarget time.Duration // 0: not given (ccparams.Parse's default)
}

// String is the spec as written in scenario files: "reno", "olia+lisa",
// "olia+lisa+pacing", "rsf(target=5ms)".
func (c CCSpec) String() string {
	if c.Algo == "" {
		return c.Name
	}
	s := c.Algo
	if c.LISA {
		s += "+lisa"
	}
	if c.Pacing {
		s += "+pacing"
	}
	if c.RSFTarget > 0 {
		s += "(target=" + c.RSFTarget.String() + ")"
	}
	return s
}

// Ours reports whether the lab loads this CC.
func (c CCSpec) Ours() bool { return c.Algo != "" }

// Record says what to sample and how to measure.
type Record struct {
	Sample time.Duration // sampling interval of the time series
	Warmup time.Duration // throughput of timed flows excludes this first part
	Kernel bool          // sample every subflow's tcp_info (sock_diag)
	BPF    bool          // sample mptcp-cc's per-subflow map
	Plots  bool
}

// Case is one cell of a scenario file's matrix.
type Case struct {
	ID         string // variant, or variant@sweepvalue
	Variant    string
	Sweep      string // the sweep value as written ("" without a sweep)
	SweepIndex int
	Scenario   *Scenario
}

// File is a loaded, validated scenario file.
type File struct {
	Path       string
	Source     []byte
	Name       string
	Variants   []string
	SweepName  string
	SweepSet   []string
	SweepVals  []string
	Cases      []Case
	References map[string]any // free-form "reference:" section (paper numbers)
}

// Load reads and validates a scenario file. Errors name the file, the line
// and the field.
func Load(path string) (*File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src)
}

// Parse validates scenario source; path names it in errors and anchors
// relative trace paths.
func Parse(path string, src []byte) (*File, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: a scenario is a YAML mapping (name:, links:, hosts:, flows:, ...)", path)
	}
	root := doc.Content[0]
	e := &errList{file: path}
	var top rawScenario
	e.decode(root, "", &top)
	if err := e.err(); err != nil {
		return nil, err
	}
	f := &File{Path: path, Source: src, Name: top.Name}
	if top.Reference.Kind != 0 {
		_ = top.Reference.Decode(&f.References)
	}
	variants := parseVariants(e, top.Variants)
	for _, v := range variants {
		f.Variants = append(f.Variants, v.name)
	}
	sweepVals := f.parseSweep(e, top.Sweep)
	if err := e.err(); err != nil {
		return nil, err
	}
	if err := f.addCases(root, variants, sweepVals); err != nil {
		return nil, err
	}
	return f, nil
}

// variant is a named set of overrides of the base scenario.
type variant struct {
	name string
	sets []override
}

// parseVariants returns the file's variants; without any, the base alone.
func parseVariants(e *errList, raw []rawVariant) []variant {
	if len(raw) == 0 {
		return []variant{{name: "base"}}
	}
	var out []variant
	seen := map[string]bool{}
	for i, v := range raw {
		p := fmt.Sprintf("variants[%d]", i)
		if !validID(v.Name) {
			e.add(nil, p+".name", "%q: want a name of letters, digits, '.', '_', '+' or '-'", v.Name)
			continue
		}
		if seen[v.Name] {
			e.add(nil, p+".name", "%q is used twice", v.Name)
		}
		seen[v.Name] = true
		out = append(out, variant{v.Name, overrides(e, v.Set, p+".set")})
	}
	return out
}

// parseSweep records the sweep in f and returns its values; without a
// sweep, one nil value (the scenario as written).
func (f *File) parseSweep(e *errList, s *rawSweep) []*yaml.Node {
	if s == nil {
		return []*yaml.Node{nil}
	}
	f.SweepName = s.Name
	switch s.Set.Kind {
	case yaml.ScalarNode:
		f.SweepSet = []string{s.Set.Value}
	case yaml.SequenceNode:
		for _, n := range s.Set.Content {
			f.SweepSet = append(f.SweepSet, n.Value)
		}
	default:
		e.add(&s.Set, "sweep.set", "want the dotted path of a field (e.g. flows.mp.bytes) or a list of them")
	}
	if len(s.Values) == 0 {
		e.add(nil, "sweep.values", "want at least one value")
	}
	var vals []*yaml.Node
	for i := range s.Values {
		n := &s.Values[i]
		if n.Kind != yaml.ScalarNode {
			e.add(n, fmt.Sprintf("sweep.values[%d]", i), "want a plain value")
			continue
		}
		f.SweepVals = append(f.SweepVals, n.Value)
		vals = append(vals, n)
	}
	if f.SweepName == "" && len(f.SweepSet) > 0 {
		f.SweepName = f.SweepSet[0]
	}
	return vals
}

// addCases resolves every variant x sweep value into a case.
func (f *File) addCases(root *yaml.Node, variants []variant, sweepVals []*yaml.Node) error {
	dir := filepath.Dir(f.Path)
	for _, v := range variants {
		for si, sv := range sweepVals {
			c, err := f.resolveCase(root, dir, v, si, sv)
			if err != nil {
				return err
			}
			f.Cases = append(f.Cases, c)
		}
	}
	return nil
}

// resolveCase applies a variant's overrides and a sweep value (nil: none)
// to a copy of the base, and resolves it.
func (f *File) resolveCase(root *yaml.Node, dir string, v variant, si int, sv *yaml.Node) (Case, error) {
	e := &errList{file: f.Path}
	c := Case{ID: v.name, Variant: v.name, SweepIndex: si}
	node := cloneNode(root)
	for _, o := range v.sets {
		o.apply(node, e)
	}
	if sv != nil {
		c.Sweep = sv.Value
		c.ID += "@" + Sanitize(sv.Value)
		for _, p := range f.SweepSet {
			override{path: p, value: sv, where: "sweep.set"}.apply(node, e)
		}
	}
	if err := e.err(); err != nil {
		return c, err
	}
	ce := &errList{file: f.Path}
	if v.name != "base" || sv != nil {
		ce.context = "case " + c.ID
	}
	c.Scenario = resolve(node, dir, ce)
	return c, ce.err()
}

// Algorithms returns the distinct congestion controls of ours that the
// file's cases use, in a stable order.
func (f *File) Algorithms() []CCSpec {
	seen := map[string]bool{}
	var out []CCSpec
	for _, c := range f.Cases {
		for _, fl := range c.Scenario.Flows {
			if fl.CC.Ours() && !seen[fl.CC.String()] {
				seen[fl.CC.String()] = true
				out = append(out, fl.CC)
			}
		}
	}
	return out
}
