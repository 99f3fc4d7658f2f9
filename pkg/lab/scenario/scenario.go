package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/linkem"
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
	Trace  string // absolute path of a mahimahi trace
}

// Emulated reports whether the link needs the user-space emulator (delay,
// loss, jitter or a trace), rather than a veth with tbf.
func (l Link) Emulated() bool { return l.Delay > 0 || l.Loss > 0 || l.Jitter > 0 || l.Trace != "" }

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
	JoinAfter       time.Duration // 0: endpoints from the start; else added this long into the repetition
	MaxSubflows     int
	AddAddrAccepted int
}

// HostPath is one interface of a host and the access link it crosses.
type HostPath struct {
	Link      string
	LinkIndex int
	Backup    bool
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
	RSFTarget time.Duration
}

// String is the spec as written in scenario files: "reno", "olia+lisa",
// "rsf(target=5ms)".
func (c CCSpec) String() string {
	if c.Algo == "" {
		return c.Name
	}
	s := c.Algo
	if c.LISA {
		s += "+lisa"
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
	e.checkKeys(root, reflect.TypeOf(rawScenario{}), "")
	if err := e.err(); err != nil {
		return nil, err
	}
	var top rawScenario
	if err := root.Decode(&top); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	f := &File{Path: path, Source: src, Name: top.Name}
	if top.Reference.Kind != 0 {
		_ = top.Reference.Decode(&f.References)
	}

	// Variants and the sweep: each is a set of overrides of the base.
	type variant struct {
		name string
		sets []override
	}
	variants := []variant{{name: "base"}}
	if len(top.Variants) > 0 {
		variants = nil
		seen := map[string]bool{}
		for i, v := range top.Variants {
			p := fmt.Sprintf("variants[%d]", i)
			if !validID(v.Name) {
				e.add(nil, p+".name", "%q: want a name of letters, digits, '.', '_', '+' or '-'", v.Name)
				continue
			}
			if seen[v.Name] {
				e.add(nil, p+".name", "%q is used twice", v.Name)
			}
			seen[v.Name] = true
			sets, err := overrides(v.Set, p+".set")
			if err != nil {
				e.errs = append(e.errs, err)
			}
			variants = append(variants, variant{v.Name, sets})
		}
	}
	for _, v := range variants {
		f.Variants = append(f.Variants, v.name)
	}
	sweepVals := []*yaml.Node{nil}
	if top.Sweep != nil {
		s := top.Sweep
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
		sweepVals = nil
		for i := range s.Values {
			n := &s.Values[i]
			if n.Kind != yaml.ScalarNode {
				e.add(n, fmt.Sprintf("sweep.values[%d]", i), "want a plain value")
				continue
			}
			f.SweepVals = append(f.SweepVals, n.Value)
			sweepVals = append(sweepVals, n)
		}
		if f.SweepName == "" && len(f.SweepSet) > 0 {
			f.SweepName = f.SweepSet[0]
		}
	}
	if err := e.err(); err != nil {
		return nil, err
	}

	dir := filepath.Dir(path)
	for _, v := range variants {
		for si, sv := range sweepVals {
			c := Case{ID: v.name, Variant: v.name, SweepIndex: si}
			node := cloneNode(root)
			for _, o := range v.sets {
				if err := o.apply(node); err != nil {
					e.errs = append(e.errs, err)
				}
			}
			if sv != nil {
				c.Sweep = sv.Value
				c.ID += "@" + Sanitize(sv.Value)
				for _, p := range f.SweepSet {
					if err := (override{path: p, value: sv, where: "sweep.set"}).apply(node); err != nil {
						e.errs = append(e.errs, err)
					}
				}
			}
			if err := e.err(); err != nil {
				return nil, err
			}
			ce := &errList{file: path}
			if v.name != "base" || sv != nil {
				ce.context = "case " + c.ID
			}
			sc := resolve(node, dir, ce)
			if err := ce.err(); err != nil {
				return nil, err
			}
			c.Scenario = sc
			f.Cases = append(f.Cases, c)
		}
	}
	return f, nil
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

// ---- raw YAML forms ----

type rawScenario struct {
	Name        string       `yaml:"name"`
	Description string       `yaml:"description"`
	Seed        *uint64      `yaml:"seed"`
	Repetitions int          `yaml:"repetitions"`
	Timeout     string       `yaml:"timeout"`
	NoOffload   bool         `yaml:"no_offload"`
	Sysctls     []string     `yaml:"sysctls"`
	Links       yaml.Node    `yaml:"links"`
	Servers     yaml.Node    `yaml:"servers"`
	Hosts       yaml.Node    `yaml:"hosts"`
	Flows       yaml.Node    `yaml:"flows"`
	Record      rawRecord    `yaml:"record"`
	Variants    []rawVariant `yaml:"variants"`
	Sweep       *rawSweep    `yaml:"sweep"`
	Reference   yaml.Node    `yaml:"reference"` // free-form: the paper's numbers
	Notes       yaml.Node    `yaml:"notes"`     // free-form
}

type rawLink struct {
	Rate   string `yaml:"rate"`
	Delay  string `yaml:"delay"`
	Loss   string `yaml:"loss"`
	Jitter string `yaml:"jitter"`
	Queue  string `yaml:"queue"`
	Trace  string `yaml:"trace"`
}

type rawMPTCP struct {
	Endpoints       string `yaml:"endpoints"`
	JoinAfter       string `yaml:"join_after"`
	Subflows        int    `yaml:"subflows"`
	AddAddrAccepted int    `yaml:"add_addr_accepted"`
}

type rawServer struct {
	Link  *rawLink `yaml:"link"`
	MPTCP rawMPTCP `yaml:"mptcp"`
}

type rawHost struct {
	Count int       `yaml:"count"`
	Paths []rawPath `yaml:"paths"`
	MPTCP rawMPTCP  `yaml:"mptcp"`
}

type rawPath struct {
	Link   string `yaml:"link"`
	Backup bool   `yaml:"backup"`
}

// UnmarshalYAML accepts a bare link name for a path.
func (p *rawPath) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		p.Link = n.Value
		return nil
	}
	type plain rawPath
	return n.Decode((*plain)(p))
}

type rawFlow struct {
	From      string    `yaml:"from"`
	To        string    `yaml:"to"`
	Protocol  string    `yaml:"protocol"`
	CC        yaml.Node `yaml:"cc"`
	Tool      string    `yaml:"tool"`
	Count     int       `yaml:"count"`
	Start     string    `yaml:"start"`
	Bytes     string    `yaml:"bytes"`
	Duration  string    `yaml:"duration"`
	Path      int       `yaml:"path"`
	Timeout   string    `yaml:"timeout"`
	IperfArgs []string  `yaml:"iperf3_args"`
}

type rawCC struct {
	Algo      string `yaml:"algo"`
	LISA      bool   `yaml:"lisa"`
	RSFTarget string `yaml:"rsf_target"`
}

type rawRecord struct {
	Sample string `yaml:"sample"`
	Warmup string `yaml:"warmup"`
	Kernel *bool  `yaml:"kernel"`
	BPF    *bool  `yaml:"bpf"`
	Plots  *bool  `yaml:"plots"`
}

type rawVariant struct {
	Name string    `yaml:"name"`
	Set  yaml.Node `yaml:"set"`
}

type rawSweep struct {
	Name   string      `yaml:"name"`
	Set    yaml.Node   `yaml:"set"`
	Values []yaml.Node `yaml:"values"`
}

// ---- errors ----

type errList struct {
	file    string
	context string
	errs    []error
}

func (e *errList) add(n *yaml.Node, path, format string, args ...any) {
	loc := e.file
	if n != nil && n.Line > 0 {
		loc += ":" + strconv.Itoa(n.Line)
	}
	msg := fmt.Sprintf(format, args...)
	if e.context != "" {
		msg += " (in " + e.context + ")"
	}
	e.errs = append(e.errs, fmt.Errorf("%s: %s: %s", loc, path, msg))
}

func (e *errList) err() error {
	if len(e.errs) > 8 {
		e.errs = append(e.errs[:8], fmt.Errorf("... and %d more", len(e.errs)-8))
	}
	return errors.Join(e.errs...)
}

// checkKeys reports mapping keys that name no field of t, recursively, so
// a typo is an error naming the line and the fields that exist.
func (e *errList) checkKeys(n *yaml.Node, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(yaml.Node{}) || n == nil {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if t == reflect.TypeOf(rawPath{}) && n.Kind == yaml.ScalarNode {
				return
			}
			e.add(n, strings.TrimPrefix(path, "."), "want a mapping of %s", strings.Join(fieldNames(t), ", "))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fieldByTag(t, k.Value)
			if !ok {
				e.add(k, strings.TrimPrefix(path+"."+k.Value, "."), "unknown field; known fields here: %s", strings.Join(fieldNames(t), ", "))
				continue
			}
			e.checkKeys(v, f.Type, path+"."+k.Value)
		}
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode {
			for i, c := range n.Content {
				e.checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if strings.Split(f.Tag.Get("yaml"), ",")[0] == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func fieldNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if n := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; n != "" && n != "-" {
			out = append(out, n)
		}
	}
	return out
}

// ---- overrides ----

type override struct {
	path  string
	value *yaml.Node
	where string
}

func overrides(n yaml.Node, where string) ([]override, error) {
	if n.Kind == 0 {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: %s: want a mapping of dotted field paths to values, e.g. flows.mp.cc: olia", n.Line, where)
	}
	var out []override
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, override{path: n.Content[i].Value, value: n.Content[i+1], where: where})
	}
	return out, nil
}

// apply sets the dotted path in the scenario tree. Every part but the last
// must exist, so a misspelt link or flow name is an error, not a new entry.
func (o override) apply(root *yaml.Node) error {
	parts := strings.Split(o.path, ".")
	cur := root
	for i, p := range parts {
		if cur.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: %s: %s: %s is not a mapping", o.value.Line, o.where, o.path, strings.Join(parts[:i], "."))
		}
		var next *yaml.Node
		for j := 0; j+1 < len(cur.Content); j += 2 {
			if cur.Content[j].Value == p {
				next = cur.Content[j+1]
				if i == len(parts)-1 {
					cur.Content[j+1] = cloneNode(o.value)
					return nil
				}
			}
		}
		if next == nil {
			if i < len(parts)-1 {
				var have []string
				for j := 0; j+1 < len(cur.Content); j += 2 {
					have = append(have, cur.Content[j].Value)
				}
				where := "the scenario"
				if i > 0 {
					where = strings.Join(parts[:i], ".")
				}
				return fmt.Errorf("line %d: %s: %s: %s has no %q (it has: %s)", o.value.Line, o.where, o.path, where, p, strings.Join(have, ", "))
			}
			cur.Content = append(cur.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p}, cloneNode(o.value))
			return nil
		}
		cur = next
	}
	return nil
}

func cloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = cloneNode(k)
	}
	return &c
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
var sysctlRE = regexp.MustCompile(`^net\.[a-z0-9_.]+$`)

func validID(s string) bool { return idRE.MatchString(s) && len(s) <= 64 }

// Sanitize maps a sweep value to the part of a case id (and directory name)
// it gives: characters other than letters, digits and ._+- become _.
func Sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' || r == '+' {
			return r
		}
		return '_'
	}, s)
}

// ---- resolution ----

type entry struct {
	key  string
	keyN *yaml.Node
	val  *yaml.Node
}

func entries(e *errList, n *yaml.Node, path string) []entry {
	if n.Kind == 0 {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		e.add(n, path, "want a mapping from names to definitions")
		return nil
	}
	var out []entry
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !nameRE.MatchString(k.Value) || len(k.Value) > 32 {
			e.add(k, path+"."+k.Value, "names are 1 to 32 letters, digits, '_' or '-'")
			continue
		}
		if seen[k.Value] {
			e.add(k, path+"."+k.Value, "defined twice")
		}
		seen[k.Value] = true
		out = append(out, entry{k.Value, k, n.Content[i+1]})
	}
	return out
}

// fieldNode finds the value node of key in a mapping, for error lines.
func fieldNode(n *yaml.Node, key string) *yaml.Node {
	if n != nil && n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
	}
	return n
}

func resolve(root *yaml.Node, dir string, e *errList) *Scenario {
	e.checkKeys(root, reflect.TypeOf(rawScenario{}), "")
	if len(e.errs) > 0 {
		return nil
	}
	var r rawScenario
	if err := root.Decode(&r); err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s: %v", e.file, err))
		return nil
	}
	s := &Scenario{Name: r.Name, Description: r.Description, Seed: 1, Repetitions: r.Repetitions, NoOffload: r.NoOffload}
	if r.Seed != nil {
		s.Seed = *r.Seed
	}
	for i, sc := range r.Sysctls {
		k, v, ok := strings.Cut(sc, "=")
		if !ok || !sysctlRE.MatchString(strings.TrimSpace(k)) || strings.TrimSpace(v) == "" {
			e.add(fieldNode(root, "sysctls"), fmt.Sprintf("sysctls[%d]", i), "%q: want key=value, e.g. net.ipv4.tcp_wmem=4096 16384 4194304", sc)
			continue
		}
		s.Sysctls = append(s.Sysctls, strings.TrimSpace(k)+"="+strings.TrimSpace(v))
	}
	if s.Name == "" {
		e.add(root, "name", "required (it names the results directory)")
	} else if !validID(s.Name) {
		e.add(fieldNode(root, "name"), "name", "%q: use letters, digits, '.', '_', '+' or '-'", s.Name)
	}
	switch {
	case s.Repetitions == 0:
		s.Repetitions = 1
	case s.Repetitions < 0 || s.Repetitions > 1000:
		e.add(fieldNode(root, "repetitions"), "repetitions", "%d: want 1 to 1000", s.Repetitions)
	}
	if r.Timeout != "" {
		d, err := ParseDuration(r.Timeout)
		if err != nil {
			e.add(fieldNode(root, "timeout"), "timeout", "%v", err)
		}
		s.Timeout = d
	}

	links := map[string]int{}
	for _, en := range entries(e, &r.Links, "links") {
		p := "links." + en.key
		e.checkKeys(en.val, reflect.TypeOf(rawLink{}), p)
		var rl rawLink
		if err := en.val.Decode(&rl); err != nil {
			e.add(en.val, p, "%v", err)
			continue
		}
		links[en.key] = len(s.Links)
		s.Links = append(s.Links, resolveLink(e, en.key, rl, en.val, p, dir))
	}
	if len(s.Links) == 0 {
		e.add(root, "links", "define at least one link (name: {rate: 10Mbit, delay: 20ms, ...})")
	}

	servers := map[string]int{}
	for _, en := range entries(e, &r.Servers, "servers") {
		p := "servers." + en.key
		e.checkKeys(en.val, reflect.TypeOf(rawServer{}), p)
		var rs rawServer
		if en.val.Kind != yaml.ScalarNode || en.val.Value != "" {
			if err := en.val.Decode(&rs); err != nil {
				e.add(en.val, p, "%v", err)
				continue
			}
		}
		sv := Server{Name: en.key, MaxSubflows: rs.MPTCP.Subflows, Link: Link{Name: en.key}}
		if rs.Link != nil {
			sv.Link = resolveLink(e, en.key, *rs.Link, fieldNode(en.val, "link"), p+".link", dir)
		}
		if rs.MPTCP.Endpoints != "" || rs.MPTCP.AddAddrAccepted != 0 {
			e.add(fieldNode(en.val, "mptcp"), p+".mptcp", "servers take only subflows: (their limit); endpoints are a host setting")
		}
		if sv.MaxSubflows < 0 || sv.MaxSubflows > 8 {
			e.add(fieldNode(en.val, "mptcp"), p+".mptcp.subflows", "%d: want 0 to 8", sv.MaxSubflows)
		}
		servers[en.key] = len(s.Servers)
		s.Servers = append(s.Servers, sv)
	}
	if len(s.Servers) == 0 {
		e.add(root, "servers", "define at least one server (name: {} or name: {link: {rate: 10Mbit}})")
	}

	hosts := map[string]int{}
	instances := 0
	for _, en := range entries(e, &r.Hosts, "hosts") {
		p := "hosts." + en.key
		e.checkKeys(en.val, reflect.TypeOf(rawHost{}), p)
		var rh rawHost
		if err := en.val.Decode(&rh); err != nil {
			e.add(en.val, p, "%v", err)
			continue
		}
		h := Host{Name: en.key, Count: rh.Count, Endpoints: rh.MPTCP.Endpoints,
			MaxSubflows: rh.MPTCP.Subflows, AddAddrAccepted: rh.MPTCP.AddAddrAccepted}
		if h.Count == 0 {
			h.Count = 1
		}
		if h.Count < 0 || h.Count > 240 {
			e.add(fieldNode(en.val, "count"), p+".count", "%d: want 1 to 240 instances", rh.Count)
		}
		instances += h.Count
		if len(rh.Paths) == 0 || len(rh.Paths) > 8 {
			e.add(en.val, p+".paths", "want 1 to 8 paths (each names the link it crosses)")
		}
		for i, rp := range rh.Paths {
			j, ok := links[rp.Link]
			if !ok {
				e.add(fieldNode(en.val, "paths"), fmt.Sprintf("%s.paths[%d]", p, i), "link %q is not defined (links: %s)", rp.Link, strings.Join(keys(links), ", "))
			}
			h.Paths = append(h.Paths, HostPath{Link: rp.Link, LinkIndex: j, Backup: rp.Backup})
		}
		switch h.Endpoints {
		case "":
			h.Endpoints = "subflow"
		case "subflow", "fullmesh", "none":
		default:
			e.add(fieldNode(en.val, "mptcp"), p+".mptcp.endpoints", "%q: want subflow (default), fullmesh or none", h.Endpoints)
		}
		if rh.MPTCP.JoinAfter != "" {
			d, err := ParseDuration(rh.MPTCP.JoinAfter)
			switch {
			case err != nil:
				e.add(fieldNode(en.val, "mptcp"), p+".mptcp.join_after", "%v", err)
			case d == 0:
				e.add(fieldNode(en.val, "mptcp"), p+".mptcp.join_after", "0: leave it out to join at once")
			case h.Endpoints == "none" || len(rh.Paths) < 2:
				e.add(fieldNode(en.val, "mptcp"), p+".mptcp.join_after", "nothing would join: the host needs a second path and endpoints other than none")
			}
			h.JoinAfter = d
		}
		if h.MaxSubflows < 0 || h.MaxSubflows > 8 {
			e.add(fieldNode(en.val, "mptcp"), p+".mptcp.subflows", "%d: want 0 to 8", h.MaxSubflows)
		}
		if h.AddAddrAccepted < 0 || h.AddAddrAccepted > 8 {
			e.add(fieldNode(en.val, "mptcp"), p+".mptcp.add_addr_accepted", "%d: want 0 to 8", h.AddAddrAccepted)
		}
		hosts[en.key] = len(s.Hosts)
		s.Hosts = append(s.Hosts, h)
	}
	if len(s.Hosts) == 0 {
		e.add(root, "hosts", "define at least one host (name: {paths: [link, ...]})")
	}
	if instances > 240 {
		e.add(fieldNode(root, "hosts"), "hosts", "%d host instances in all; at most 240", instances)
	}

	// record before flows: the warmup is checked against durations.
	rec := Record{Sample: 100 * time.Millisecond, Kernel: true, BPF: true, Plots: true}
	rn := fieldNode(root, "record")
	if rn != root {
		e.checkKeys(rn, reflect.TypeOf(rawRecord{}), "record")
	}
	if r.Record.Sample != "" {
		d, err := ParseDuration(r.Record.Sample)
		if err != nil {
			e.add(fieldNode(rn, "sample"), "record.sample", "%v", err)
		} else if d < 10*time.Millisecond || d > time.Minute {
			e.add(fieldNode(rn, "sample"), "record.sample", "%v: want 10ms to 1m", d)
		}
		rec.Sample = d
	}
	if r.Record.Warmup != "" {
		d, err := ParseDuration(r.Record.Warmup)
		if err != nil {
			e.add(fieldNode(rn, "warmup"), "record.warmup", "%v", err)
		}
		rec.Warmup = d
	}
	if r.Record.Kernel != nil {
		rec.Kernel = *r.Record.Kernel
	}
	if r.Record.BPF != nil {
		rec.BPF = *r.Record.BPF
	}
	if r.Record.Plots != nil {
		rec.Plots = *r.Record.Plots
	}
	s.Record = rec

	for _, en := range entries(e, &r.Flows, "flows") {
		p := "flows." + en.key
		e.checkKeys(en.val, reflect.TypeOf(rawFlow{}), p)
		var rf rawFlow
		if err := en.val.Decode(&rf); err != nil {
			e.add(en.val, p, "%v", err)
			continue
		}
		s.Flows = append(s.Flows, resolveFlow(e, s, en.key, rf, en.val, p, hosts, servers))
	}
	if len(s.Flows) == 0 {
		e.add(root, "flows", "define at least one flow (name: {from: HOST, to: SERVER, cc: reno, duration: 10s})")
	}
	if s.Timeout == 0 {
		var end time.Duration
		for _, f := range s.Flows {
			end = max(end, f.Start+f.Timeout)
		}
		s.Timeout = end + 30*time.Second
	}
	return s
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func resolveLink(e *errList, name string, rl rawLink, n *yaml.Node, p, dir string) Link {
	l := Link{Name: name}
	var err error
	if rl.Rate != "" {
		if l.Rate, err = ParseRate(rl.Rate); err != nil {
			e.add(fieldNode(n, "rate"), p+".rate", "%v", err)
		}
	}
	if rl.Delay != "" {
		if l.Delay, err = ParseDuration(rl.Delay); err != nil {
			e.add(fieldNode(n, "delay"), p+".delay", "%v", err)
		}
	}
	if rl.Jitter != "" {
		if l.Jitter, err = ParseDuration(rl.Jitter); err != nil {
			e.add(fieldNode(n, "jitter"), p+".jitter", "%v", err)
		}
	}
	if rl.Loss != "" {
		if l.Loss, err = ParseProb(rl.Loss); err != nil {
			e.add(fieldNode(n, "loss"), p+".loss", "%v", err)
		}
	}
	if rl.Queue != "" {
		if l.Queue, err = ParseQueue(rl.Queue); err != nil {
			e.add(fieldNode(n, "queue"), p+".queue", "%v", err)
		}
	}
	if rl.Trace != "" {
		t := rl.Trace
		if !filepath.IsAbs(t) {
			t = filepath.Join(dir, t)
		}
		if _, err := linkem.LoadTrace(t); err != nil {
			e.add(fieldNode(n, "trace"), p+".trace", "%v", err)
		}
		l.Trace = t
		if l.Rate != 0 {
			e.add(fieldNode(n, "rate"), p+".rate", "a link has a rate or a trace, not both")
		}
	}
	if l.Queue.BDP > 0 && l.Rate == 0 {
		e.add(fieldNode(n, "queue"), p+".queue", "a queue in BDPs needs a rate")
	}
	return l
}

func resolveFlow(e *errList, s *Scenario, name string, rf rawFlow, n *yaml.Node, p string, hosts, servers map[string]int) Flow {
	f := Flow{Name: name, From: rf.From, To: rf.To, Tool: rf.Tool, Count: rf.Count, Path: rf.Path, IperfArgs: rf.IperfArgs}
	hostOK := true
	var ok bool
	if f.Host, ok = hosts[rf.From]; !ok {
		if rf.From == "" && len(hosts) == 1 {
			f.From, f.Host = keys(hosts)[0], 0
		} else {
			hostOK = false
			e.add(fieldNode(n, "from"), p+".from", "host %q is not defined (hosts: %s)", rf.From, strings.Join(keys(hosts), ", "))
		}
	}
	if f.Server, ok = servers[rf.To]; !ok {
		if rf.To == "" && len(servers) == 1 {
			f.To, f.Server = keys(servers)[0], 0
		} else {
			e.add(fieldNode(n, "to"), p+".to", "server %q is not defined (servers: %s)", rf.To, strings.Join(keys(servers), ", "))
		}
	}
	switch rf.Protocol {
	case "", "mptcp":
		f.MPTCP = true
	case "tcp":
	default:
		e.add(fieldNode(n, "protocol"), p+".protocol", "%q: want mptcp or tcp", rf.Protocol)
	}
	switch f.Tool {
	case "":
		f.Tool = "xfer"
	case "xfer", "iperf3":
	default:
		e.add(fieldNode(n, "tool"), p+".tool", "%q: want xfer (the lab's own, in-process) or iperf3", f.Tool)
	}
	if len(f.IperfArgs) > 0 && f.Tool != "iperf3" {
		e.add(fieldNode(n, "iperf3_args"), p+".iperf3_args", "only for tool: iperf3")
	}
	switch {
	case f.Count == 0:
		f.Count = 1
	case f.Count < 0 || f.Count > 256:
		e.add(fieldNode(n, "count"), p+".count", "%d: want 1 to 256 connections per host instance", f.Count)
	}
	if hostOK && f.Host < len(s.Hosts) {
		if np := len(s.Hosts[f.Host].Paths); f.Path < 0 || f.Path >= np {
			e.add(fieldNode(n, "path"), p+".path", "%d: host %s has paths 0 to %d", f.Path, f.From, np-1)
		}
	}
	var err error
	if rf.Start != "" {
		if f.Start, err = ParseDuration(rf.Start); err != nil {
			e.add(fieldNode(n, "start"), p+".start", "%v", err)
		}
	}
	switch {
	case rf.Bytes != "" && rf.Duration != "":
		e.add(fieldNode(n, "bytes"), p, "give bytes or duration, not both")
	case rf.Bytes != "":
		if f.Bytes, err = ParseSize(rf.Bytes); err != nil {
			e.add(fieldNode(n, "bytes"), p+".bytes", "%v", err)
		} else if f.Bytes <= 0 {
			e.add(fieldNode(n, "bytes"), p+".bytes", "must be positive")
		}
	case rf.Duration != "":
		if f.Duration, err = ParseDuration(rf.Duration); err != nil {
			e.add(fieldNode(n, "duration"), p+".duration", "%v", err)
		} else if f.Duration <= 0 {
			e.add(fieldNode(n, "duration"), p+".duration", "must be positive")
		} else if s.Record.Warmup >= f.Duration {
			e.add(fieldNode(n, "duration"), p+".duration", "%v is not longer than record.warmup (%v): nothing would be measured", f.Duration, s.Record.Warmup)
		}
	default:
		e.add(n, p, "give bytes (e.g. 10MB) or duration (e.g. 30s)")
	}
	if rf.Timeout != "" {
		if f.Timeout, err = ParseDuration(rf.Timeout); err != nil {
			e.add(fieldNode(n, "timeout"), p+".timeout", "%v", err)
		}
	} else if f.Duration > 0 {
		f.Timeout = f.Duration + 30*time.Second
	} else {
		f.Timeout = 5 * time.Minute
	}
	f.CC = parseCC(e, fieldNode(n, "cc"), &rf.CC, p+".cc", f.Tool)
	return f
}

var kernelCCRE = regexp.MustCompile(`^[a-z0-9_-]{1,15}$`)

// parseCC reads "reno", "olia", "olia+lisa", or {algo: rsf, lisa: true,
// rsf_target: 5ms}.
func parseCC(e *errList, n *yaml.Node, raw *yaml.Node, p, tool string) CCSpec {
	var c CCSpec
	switch raw.Kind {
	case 0:
		e.add(n, p, "required: a kernel congestion control (reno, cubic, ...) or one of ours (%s), optionally +lisa", strings.Join(cc.Names(), ", "))
		return c
	case yaml.ScalarNode:
		s := strings.TrimSpace(raw.Value)
		base, lisa := strings.CutSuffix(s, "+lisa")
		if _, err := cc.Lookup(base); err == nil {
			return CCSpec{Name: base, Algo: base, LISA: lisa}
		}
		if lisa {
			e.add(raw, p, "%q: +lisa composes with our algorithms only (%s)", s, strings.Join(cc.Names(), ", "))
			return c
		}
		if !kernelCCRE.MatchString(s) {
			e.add(raw, p, "%q is not a congestion control name", s)
			return c
		}
		return CCSpec{Name: s}
	case yaml.MappingNode:
		e.checkKeys(raw, reflect.TypeOf(rawCC{}), p)
		var rc rawCC
		if err := raw.Decode(&rc); err != nil {
			e.add(raw, p, "%v", err)
			return c
		}
		if _, err := cc.Lookup(rc.Algo); err != nil {
			e.add(fieldNode(raw, "algo"), p+".algo", "%v", err)
			return c
		}
		c = CCSpec{Name: rc.Algo, Algo: rc.Algo, LISA: rc.LISA}
		if rc.RSFTarget != "" {
			d, err := ParseDuration(rc.RSFTarget)
			if err != nil {
				e.add(fieldNode(raw, "rsf_target"), p+".rsf_target", "%v", err)
			} else if rc.Algo != "rsf" {
				e.add(fieldNode(raw, "rsf_target"), p+".rsf_target", "only rsf has a target delay")
			} else if d <= 0 || d > time.Hour {
				e.add(fieldNode(raw, "rsf_target"), p+".rsf_target", "%v: want more than 0 and at most 1h", d)
			}
			c.RSFTarget = d
		}
		return c
	}
	e.add(raw, p, "want a name or a mapping {algo, lisa, rsf_target}")
	return c
}
