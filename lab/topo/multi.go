// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/mptcp-cc/mptcp-cc/lab/linkem"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// A multi-host network (BuildMulti) generalises Build to several client
// hosts (competing users), shared or private access links, and several
// servers, each behind its own link:
//
//	host 0 ──path 0──┐                 ┌── link 0 ──┐              ┌─ server link 0 ── server 0
//	       ──path 1──┤                 ├── link 1 ──┤              │
//	host 1 ──path 0──┼─ access router ─┼── link j ──┼─ core router ┼─ server link m ── server m
//	host k ──path i──┘       (RA)      └────────────┘     (RC)     └─
//
// Every host path crosses one access link (RA -> RC); paths that name the
// same link share it. Every connection to server m then crosses server m's
// link (RC -> server m), which is shared by everything that server
// receives. Either kind of link is a veth pair shaped by tbf on its sending
// side, or, with delay, loss, jitter, a trace or an AQM, a lab/linkem emulated link
// (Shaping has the details). Data flows from hosts to servers; the reverse
// direction (ACKs) gets the same delay and nothing else.
//
// Address plan (all /24):
//
//	host instance k, path i   host 10.(10+k).i.1   RA 10.(10+k).i.2     (k < 240, i < 8)
//	access link j             RA 10.3.j.1          RC 10.3.j.2          (j < 64)
//	server m                  RC 10.4.m.1          server 10.4.m.2      (m < 64)
//
// Hosts leave by the path their source address belongs to (a routing rule
// per path, table 100+i); RA sends a path's packets onto its link by source
// subnet (table 200+j); RC returns them over the same link by destination.
//
// A chained path (HostConfig.Then) crosses two access links, j then t, so
// that its traffic takes capacity on both (a path through two providers'
// bottlenecks, as in Khalili's scenario B). RC sends what arrives from such
// a path on link j back to RA over link j's reverse direction (table 300+j),
// RA puts it on link t (a rule on the incoming device, before the rules by
// source), and RC returns the ACKs over link t. Its data crosses link j's
// delay twice and link t's once, its ACKs link t's: the base RTT is twice
// the sum of both links' one-way delays (and the server link's).
//
// Namespaces are named PREFIX-SUFFIX-hK (host instances, numbered across all
// hosts), -ra, -rc and -sM, so every leftover of a build can be found by its
// prefix (CleanPrefix).

// HostConfig is one kind of client host. Count instances of it are built,
// each its own namespace with the same paths.
type HostConfig struct {
	Name  string
	Count int // instances; 0 means 1
	// Paths lists, for each of the host's interfaces, the access link it
	// crosses (an index into MultiConfig.Links).
	Paths []int
	// Backup marks paths whose MPTCP endpoint gets the backup flag.
	Backup []bool
	// Then makes path i a chained path when Then[i] >= 0: after its link
	// Paths[i] it crosses link Then[i] too. -1, or no entry: one link.
	Then []int
	// Endpoints: "subflow" (default): every path but the first is a
	// subflow endpoint, so an MPTCP connection from path 0 opens one
	// subflow per path; "fullmesh": the same with the fullmesh flag;
	// "none": no endpoints (single subflow unless added later).
	Endpoints string
	// LateEndpoints leaves the endpoints out of the build: connections
	// start with one subflow, and the others join when AddEndpoints adds
	// them (a join after the first subflow has left slow start).
	LateEndpoints bool
	// MPTCP limits of the host's path manager; 0 means 8.
	MaxSubflows, AddAddrAccepted int
}

// ServerConfig is one server and the link in front of it.
type ServerConfig struct {
	Name        string
	Link        Shaping // the core router's link toward the server
	MaxSubflows int     // MPTCP subflow limit; 0 means 8
}

// LinkConfig is one access link.
type LinkConfig struct {
	Name string
	Shaping
}

// MultiConfig describes a multi-host network.
type MultiConfig struct {
	Prefix    string // namespace name prefix; a random suffix is added
	Hosts     []HostConfig
	Links     []LinkConfig
	Servers   []ServerConfig
	NoOffload bool // disable TSO/GSO/GRO on every veth
	// Sysctls are set in every host and server namespace, e.g.
	// "net.ipv4.tcp_no_metrics_save=1".
	Sysctls []string

	plan *plan // nil: multiPlan
}

// Multi is a built multi-host network. Close removes it.
type Multi struct {
	ID      string     // PREFIX-SUFFIX: every namespace name starts with it
	Hosts   [][]string // namespace of each instance of each host
	RouterA string     // access router
	RouterC string     // core router
	Servers []string   // namespace of each server
	cfg     MultiConfig
	plan    plan
	base    []int // global instance number of each host's instance 0

	mu        sync.Mutex
	accessEm  map[int]*linkem.Path
	serverEm  map[int]*linkem.Path
	closeOnce sync.Once
	closeErr  error
}

const (
	// chainPref is the priority of the chained paths' rules, ahead of the
	// rules by source subnet (which get the kernel's default priorities,
	// counting down from the main table's 32766, as long as every one of
	// them is added before the first rule with a priority).
	chainPref    = 1000
	maxInstances = 240
	maxPaths     = 8
	maxLinks     = 64
	maxServers   = 64
)

// MultiHostAddr is the address of path i of global host instance k.
func MultiHostAddr(k, i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(10 + k), byte(i), 1})
}

// MultiServerAddr is the address of server m.
func MultiServerAddr(m int) netip.Addr { return netip.AddrFrom4([4]byte{10, 4, byte(m), 2}) }

// plan is where a network's addresses come from. BuildMulti uses
// multiPlan (the plan above); Build keeps its own, older plan (topo.go)
// on the same builder.
type plan struct {
	host, raHost                  func(k, i int) netip.Addr // host path i, both ends
	raLink, rcLink, rcSrv, server func(j int) netip.Addr    // link j's ends; server m and the RC side of its link
	// serverExtra lists more addresses (/24, on the server's only
	// device) that server m answers on; RC routes them to it.
	serverExtra func(m int) []netip.Addr
}

var multiPlan = plan{
	host:   MultiHostAddr,
	raHost: func(k, i int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(10 + k), byte(i), 2}) },
	raLink: func(j int) netip.Addr { return netip.AddrFrom4([4]byte{10, 3, byte(j), 1}) },
	rcLink: func(j int) netip.Addr { return netip.AddrFrom4([4]byte{10, 3, byte(j), 2}) },
	rcSrv:  func(m int) netip.Addr { return netip.AddrFrom4([4]byte{10, 4, byte(m), 1}) },
	server: MultiServerAddr,
}

func (c MultiConfig) validate() error {
	if len(c.Hosts) == 0 {
		return errors.New("topology needs at least one host")
	}
	if len(c.Servers) == 0 || len(c.Servers) > maxServers {
		return fmt.Errorf("topology needs 1 to %d servers, got %d", maxServers, len(c.Servers))
	}
	if len(c.Links) == 0 || len(c.Links) > maxLinks {
		return fmt.Errorf("topology needs 1 to %d access links, got %d", maxLinks, len(c.Links))
	}
	total := 0
	for h, hc := range c.Hosts {
		if hc.Count < 0 {
			return fmt.Errorf("host %q: negative count %d", hc.Name, hc.Count)
		}
		total += max(hc.Count, 1)
		if len(hc.Paths) == 0 || len(hc.Paths) > maxPaths {
			return fmt.Errorf("host %q needs 1 to %d paths, got %d", hc.Name, maxPaths, len(hc.Paths))
		}
		for i, j := range hc.Paths {
			if j < 0 || j >= len(c.Links) {
				return fmt.Errorf("host %q path %d crosses link %d, which does not exist", hc.Name, i, j)
			}
		}
		if len(hc.Then) > len(hc.Paths) {
			return fmt.Errorf("host %q: %d chained links for %d paths", hc.Name, len(hc.Then), len(hc.Paths))
		}
		for i, t := range hc.Then {
			if t < -1 || t >= len(c.Links) || t == hc.Paths[i] {
				return fmt.Errorf("host %q path %d: then-link %d must be another existing link than %d, or -1 for none", hc.Name, i, t, hc.Paths[i])
			}
		}
		if len(hc.Backup) > len(hc.Paths) {
			return fmt.Errorf("host %q: %d backup flags for %d paths", hc.Name, len(hc.Backup), len(hc.Paths))
		}
		switch hc.Endpoints {
		case "", "subflow", "fullmesh", "none":
		default:
			return fmt.Errorf("host %d (%q): endpoints %q: want subflow, fullmesh or none", h, hc.Name, hc.Endpoints)
		}
	}
	if total > maxInstances {
		return fmt.Errorf("topology has %d host instances, at most %d fit the address plan", total, maxInstances)
	}
	return nil
}

// BuildMulti creates a multi-host network. On failure it removes whatever
// it created.
func BuildMulti(cfg MultiConfig) (m *Multi, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = "mpcc"
	}
	id := prefix + "-" + Suffix()
	m = &Multi{ID: id, RouterA: id + "-ra", RouterC: id + "-rc", cfg: cfg,
		accessEm: map[int]*linkem.Path{}, serverEm: map[int]*linkem.Path{}, plan: multiPlan}
	if cfg.plan != nil {
		m.plan = *cfg.plan
	}
	a := m.plan
	k := 0
	for _, hc := range cfg.Hosts {
		m.base = append(m.base, k)
		var names []string
		for range max(hc.Count, 1) {
			names = append(names, id+"-h"+strconv.Itoa(k))
			k++
		}
		m.Hosts = append(m.Hosts, names)
	}
	for s := range cfg.Servers {
		m.Servers = append(m.Servers, id+"-s"+strconv.Itoa(s))
	}
	// The returns below give m nil: close what was built through a copy.
	built := m
	defer func() {
		if err != nil {
			_ = built.Close()
		}
	}()

	all := m.Namespaces()
	for _, ns := range all {
		if err := netns.Create(ns); err != nil {
			return nil, err
		}
	}
	routerSys := []string{"net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"}
	endSys := append([]string{"net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0", "net.mptcp.enabled=1"}, cfg.Sysctls...)
	for _, ns := range []string{m.RouterA, m.RouterC} {
		if err := netns.Exec(ns, append([]string{"sysctl", "-qw"}, routerSys...)...); err != nil {
			return nil, err
		}
	}
	for _, ns := range append(m.hostNames(), m.Servers...) {
		if err := netns.Exec(ns, append([]string{"sysctl", "-qw"}, endSys...)...); err != nil {
			return nil, err
		}
	}

	// Access links RA -> RC.
	for j, lc := range cfg.Links {
		dev := "l" + strconv.Itoa(j)
		if lc.emulated() {
			p, err := startEmulated(fmt.Sprintf("link %d (%s)", j, lc.Name), m.RouterA, dev, a.raLink(j), m.RouterC, dev, a.rcLink(j), lc.Shaping)
			if err != nil {
				return nil, err
			}
			m.setEm(m.accessEm, j, p)
			continue
		}
		if err := m.veth(m.RouterA, dev, a.raLink(j), m.RouterC, dev, a.rcLink(j)); err != nil {
			return nil, err
		}
		if err := tbf(m.RouterA, dev, lc.Shaping); err != nil {
			return nil, err
		}
		// A table per link: RA sends the paths that cross it there.
	}
	var raBatch, rcBatch []string
	for j := range cfg.Links {
		raBatch = append(raBatch, fmt.Sprintf("route add default via %s dev l%d table %d", a.rcLink(j), j, 200+j))
	}

	// Server links RC -> server.
	for s, sc := range cfg.Servers {
		dev := "s" + strconv.Itoa(s)
		if sc.Link.emulated() {
			p, err := startEmulated(fmt.Sprintf("server link %d (%s)", s, sc.Name), m.RouterC, dev, a.rcSrv(s), m.Servers[s], "up0", a.server(s), sc.Link)
			if err != nil {
				return nil, err
			}
			m.setEm(m.serverEm, s, p)
		} else {
			if err := m.veth(m.RouterC, dev, a.rcSrv(s), m.Servers[s], "up0", a.server(s)); err != nil {
				return nil, err
			}
			if err := tbf(m.RouterC, dev, sc.Link); err != nil {
				return nil, err
			}
		}
		lim := sc.MaxSubflows
		if lim == 0 {
			lim = 8
		}
		sb := []string{
			fmt.Sprintf("route add default via %s dev up0", a.rcSrv(s)),
			fmt.Sprintf("mptcp limits set subflows %d add_addr_accepted 8", lim),
		}
		if a.serverExtra != nil {
			for _, x := range a.serverExtra(s) {
				sb = append(sb, fmt.Sprintf("addr add %s dev up0", netip.PrefixFrom(x, 24)))
				rcBatch = append(rcBatch, fmt.Sprintf("route add %s via %s dev %s", netip.PrefixFrom(x, 24).Masked(), a.server(s), dev))
			}
		}
		if err := ipBatch(m.Servers[s], sb); err != nil {
			return nil, err
		}
	}

	// Hosts.
	bounce := map[int]bool{} // links that send chained paths back to RA
	// The chained paths' rules go in last: a rule added without a
	// priority gets one less than the first rule's, so a rule by source
	// added after them would come first and loop the packets on link j.
	var raChain, rcChain []string
	for h, hc := range cfg.Hosts {
		for inst, ns := range m.Hosts[h] {
			k := m.base[h] + inst
			var hb []string
			for i, j := range hc.Paths {
				ra := fmt.Sprintf("h%dp%d", k, i)
				if err := m.veth(ns, "p"+strconv.Itoa(i), a.host(k, i), m.RouterA, ra, a.raHost(k, i)); err != nil {
					return nil, err
				}
				subnet := netip.PrefixFrom(a.host(k, i), 24).Masked().String()
				hb = append(hb,
					fmt.Sprintf("rule add from %s table %d", a.host(k, i), 100+i),
					fmt.Sprintf("route add default via %s dev p%d table %d", a.raHost(k, i), i, 100+i))
				if i == 0 {
					hb = append(hb, fmt.Sprintf("route add default via %s dev p0", a.raHost(k, 0)))
				}
				raBatch = append(raBatch, fmt.Sprintf("rule add from %s table %d", subnet, 200+j))
				back := j // the link RC returns the path's ACKs over
				if i < len(hc.Then) && hc.Then[i] >= 0 {
					back = hc.Then[i]
					raChain = append(raChain, fmt.Sprintf("rule add pref %d iif l%d from %s table %d", chainPref, j, subnet, 200+back))
					rcChain = append(rcChain, fmt.Sprintf("rule add pref %d iif l%d from %s table %d", chainPref, j, subnet, 300+j))
					if !bounce[j] {
						bounce[j] = true
						rcBatch = append(rcBatch, fmt.Sprintf("route add default via %s dev l%d table %d", a.raLink(j), j, 300+j))
					}
				}
				rcBatch = append(rcBatch, fmt.Sprintf("route add %s via %s dev l%d", subnet, a.raLink(back), back))
			}
			subflows, accepted := hc.MaxSubflows, hc.AddAddrAccepted
			if subflows == 0 {
				subflows = 8
			}
			if accepted == 0 {
				accepted = 8
			}
			hb = append(hb, fmt.Sprintf("mptcp limits set subflows %d add_addr_accepted %d", subflows, accepted))
			if !hc.LateEndpoints {
				hb = append(hb, endpointCmds(a, hc, k)...)
			}
			if err := ipBatch(ns, hb); err != nil {
				return nil, err
			}
		}
	}
	if err := ipBatch(m.RouterA, append(raBatch, raChain...)); err != nil {
		return nil, err
	}
	if err := ipBatch(m.RouterC, append(rcBatch, rcChain...)); err != nil {
		return nil, err
	}
	return m, nil
}

// endpointCmds are the `ip` batch lines that give global host instance k
// its MPTCP endpoints: every path but the first.
func endpointCmds(a plan, hc HostConfig, k int) []string {
	if hc.Endpoints == "none" {
		return nil
	}
	var out []string
	for i := 1; i < len(hc.Paths); i++ {
		flags := "subflow"
		if hc.Endpoints == "fullmesh" {
			flags += " fullmesh"
		}
		if i < len(hc.Backup) && hc.Backup[i] {
			flags += " backup"
		}
		out = append(out, fmt.Sprintf("mptcp endpoint add %s dev p%d %s", a.host(k, i), i, flags))
	}
	return out
}

// EndpointCommands are the `ip -n NS ...` commands that AddEndpoints runs
// for host h, one per endpoint of each instance.
func (m *Multi) EndpointCommands(h int) []string {
	var out []string
	for inst, ns := range m.Hosts[h] {
		for _, c := range endpointCmds(m.plan, m.cfg.Hosts[h], m.base[h]+inst) {
			out = append(out, "ip -n "+ns+" "+c)
		}
	}
	return out
}

// AddEndpoints gives every instance of host h the endpoints that
// LateEndpoints left out. The path manager then opens the extra subflows
// of the connections already running.
func (m *Multi) AddEndpoints(h int) error {
	for inst, ns := range m.Hosts[h] {
		if err := ipBatch(ns, endpointCmds(m.plan, m.cfg.Hosts[h], m.base[h]+inst)); err != nil {
			return err
		}
	}
	return nil
}

func (m *Multi) setEm(where map[int]*linkem.Path, i int, p *linkem.Path) {
	m.mu.Lock()
	where[i] = p
	m.mu.Unlock()
}

func (m *Multi) hostNames() []string {
	var out []string
	for _, h := range m.Hosts {
		out = append(out, h...)
	}
	return out
}

// Namespaces lists every namespace of the network.
func (m *Multi) Namespaces() []string {
	out := m.hostNames()
	out = append(out, m.RouterA, m.RouterC)
	return append(out, m.Servers...)
}

// Instance returns the global instance number of instance inst of host h
// (what MultiHostAddr takes).
func (m *Multi) Instance(h, inst int) int { return m.base[h] + inst }

// HostAddr is the address of path i of instance inst of host h.
func (m *Multi) HostAddr(h, inst, i int) netip.Addr { return m.plan.host(m.base[h]+inst, i) }

// ServerAddr is the address of server s.
func (m *Multi) ServerAddr(s int) netip.Addr { return m.plan.server(s) }

// LinkCounters are the counters of one link's data direction.
type LinkCounters struct {
	SentBytes, SentPackets uint64
	Dropped                uint64 // queue overflow and random loss
	DroppedLoss            uint64 // random loss only (emulated links)
}

// AccessLinkStats returns the counters of access link j.
func (m *Multi) AccessLinkStats(j int) (LinkCounters, error) {
	m.mu.Lock()
	p := m.accessEm[j]
	m.mu.Unlock()
	return linkStats(p, m.RouterA, "l"+strconv.Itoa(j))
}

// ServerLinkStats returns the counters of server s's link.
func (m *Multi) ServerLinkStats(s int) (LinkCounters, error) {
	m.mu.Lock()
	p := m.serverEm[s]
	m.mu.Unlock()
	return linkStats(p, m.RouterC, "s"+strconv.Itoa(s))
}

func linkStats(p *linkem.Path, ns, dev string) (LinkCounters, error) {
	if p != nil {
		fwd, _ := p.Stats()
		return LinkCounters{
			SentBytes: fwd.DeliveredBytes, SentPackets: fwd.DeliveredPackets,
			Dropped:     fwd.DroppedLoss + fwd.DroppedQueue + fwd.DroppedError,
			DroppedLoss: fwd.DroppedLoss,
		}, nil
	}
	out, err := netns.Output(ns, "tc", "-s", "qdisc", "show", "dev", dev)
	if err != nil {
		return LinkCounters{}, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(strings.NewReplacer("(", " ", ")", " ", ",", " ").Replace(line))
		if len(f) >= 7 && f[0] == "Sent" {
			var c LinkCounters
			c.SentBytes, _ = strconv.ParseUint(f[1], 10, 64)
			c.SentPackets, _ = strconv.ParseUint(f[3], 10, 64)
			c.Dropped, _ = strconv.ParseUint(f[6], 10, 64)
			return c, nil
		}
	}
	return LinkCounters{}, fmt.Errorf("no qdisc counters on %s in %s", dev, ns)
}

// Close stops the emulated links, kills every process left inside the
// namespaces and removes them. It is idempotent.
func (m *Multi) Close() error {
	m.closeOnce.Do(func() {
		var errs []error
		m.mu.Lock()
		for _, p := range m.accessEm {
			errs = append(errs, p.Close())
		}
		for _, p := range m.serverEm {
			errs = append(errs, p.Close())
		}
		m.mu.Unlock()
		for _, ns := range m.Namespaces() {
			KillProcesses(ns)
			if err := netns.Delete(ns); err != nil {
				errs = append(errs, err)
			}
		}
		m.closeErr = errors.Join(errs...)
	})
	return m.closeErr
}

func (m *Multi) veth(ns1, dev1 string, a1 netip.Addr, ns2, dev2 string, a2 netip.Addr) error {
	return vethPair(ns1, dev1, a1, ns2, dev2, a2, m.cfg.NoOffload)
}
