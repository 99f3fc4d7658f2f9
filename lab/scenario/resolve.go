// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mptcp-cc/mptcp-cc/internal/strictyaml"
)

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
	var r rawScenario
	if e.decode(root, "", &r); len(e.errs) > 0 {
		return nil
	}
	s := resolveTop(e, root, &r)
	links := resolveLinks(e, s, root, &r, dir)
	servers := resolveServers(e, s, root, &r, dir)
	hosts := resolveHosts(e, s, root, &r, links)
	// record before flows: the warmup is checked against durations.
	s.Record = resolveRecord(e, fieldNode(root, "record"), r.Record)
	resolveFlows(e, s, root, &r, hosts, servers)
	if s.Timeout == 0 {
		var end time.Duration
		for _, f := range s.Flows {
			end = max(end, f.Start+f.Timeout)
		}
		s.Timeout = end + 30*time.Second
	}
	return s
}

// resolveTop resolves the scalar settings of the top level.
func resolveTop(e *errList, root *yaml.Node, r *rawScenario) *Scenario {
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
	parseField(e, root, "", "timeout", r.Timeout, ParseDuration, &s.Timeout)
	return s
}

// define resolves every entry of the names-to-definitions mapping n (at
// path what) with resolve, which reports false to leave an entry out, and
// appends them to out. It returns the index in out of each name.
func define[T any](e *errList, n *yaml.Node, what string, out *[]T, resolve func(en entry, p string) (T, bool)) map[string]int {
	idx := map[string]int{}
	for _, en := range entries(e, n, what) {
		v, ok := resolve(en, what+"."+en.key)
		if !ok {
			continue
		}
		idx[en.key] = len(*out)
		*out = append(*out, v)
	}
	return idx
}

// resolveLinks resolves the access links; it returns their indexes by name.
func resolveLinks(e *errList, s *Scenario, root *yaml.Node, r *rawScenario, dir string) map[string]int {
	links := define(e, &r.Links, "links", &s.Links, func(en entry, p string) (Link, bool) {
		var rl rawLink
		if !e.decode(en.val, p, &rl) {
			return Link{}, false
		}
		return resolveLink(e, en.key, rl, en.val, p, dir), true
	})
	if len(s.Links) == 0 {
		e.add(root, "links", "define at least one link (name: {rate: 10Mbit, delay: 20ms, ...})")
	}
	return links
}

// resolveServers resolves the servers; it returns their indexes by name.
func resolveServers(e *errList, s *Scenario, root *yaml.Node, r *rawScenario, dir string) map[string]int {
	servers := define(e, &r.Servers, "servers", &s.Servers, func(en entry, p string) (Server, bool) {
		var rs rawServer
		if en.val.Kind != yaml.ScalarNode || en.val.Value != "" {
			if !e.decode(en.val, p, &rs) {
				return Server{}, false
			}
		} else {
			e.problems(strictyaml.Check(en.val, reflect.TypeOf(rs), p))
		}
		return resolveServer(e, en.key, rs, en.val, p, dir), true
	})
	if len(s.Servers) == 0 {
		e.add(root, "servers", "define at least one server (name: {} or name: {link: {rate: 10Mbit}})")
	}
	return servers
}

func resolveServer(e *errList, name string, rs rawServer, n *yaml.Node, p, dir string) Server {
	sv := Server{Name: name, MaxSubflows: rs.MPTCP.Subflows, Link: Link{Name: name}}
	if rs.Link != nil {
		sv.Link = resolveLink(e, name, *rs.Link, fieldNode(n, "link"), p+".link", dir)
	}
	if rs.MPTCP.Endpoints != "" || rs.MPTCP.AddAddrAccepted != 0 || rs.MPTCP.PathManager != "" {
		e.add(fieldNode(n, "mptcp"), p+".mptcp", "servers take only subflows: (their limit); endpoints and path_manager are host settings")
	}
	if sv.MaxSubflows < 0 || sv.MaxSubflows > 8 {
		e.add(fieldNode(n, "mptcp"), p+".mptcp.subflows", "%d: want 0 to 8", sv.MaxSubflows)
	}
	return sv
}

// resolveHosts resolves the hosts; it returns their indexes by name.
func resolveHosts(e *errList, s *Scenario, root *yaml.Node, r *rawScenario, links map[string]int) map[string]int {
	instances := 0
	hosts := define(e, &r.Hosts, "hosts", &s.Hosts, func(en entry, p string) (Host, bool) {
		var rh rawHost
		if !e.decode(en.val, p, &rh) {
			return Host{}, false
		}
		h := resolveHost(e, en.key, rh, en.val, p, links)
		instances += h.Count
		return h, true
	})
	if len(s.Hosts) == 0 {
		e.add(root, "hosts", "define at least one host (name: {paths: [link, ...]})")
	}
	if instances > 240 {
		e.add(fieldNode(root, "hosts"), "hosts", "%d host instances in all; at most 240", instances)
	}
	return hosts
}

func resolveHost(e *errList, name string, rh rawHost, n *yaml.Node, p string, links map[string]int) Host {
	h := Host{Name: name, Count: rh.Count, Endpoints: rh.MPTCP.Endpoints, PathManager: rh.MPTCP.PathManager,
		MaxSubflows: rh.MPTCP.Subflows, AddAddrAccepted: rh.MPTCP.AddAddrAccepted}
	if h.Count == 0 {
		h.Count = 1
	}
	if h.Count < 0 || h.Count > 240 {
		e.add(fieldNode(n, "count"), p+".count", "%d: want 1 to 240 instances", rh.Count)
	}
	if len(rh.Paths) == 0 || len(rh.Paths) > 8 {
		e.add(n, p+".paths", "want 1 to 8 paths (each names the link it crosses)")
	}
	for i, rp := range rh.Paths {
		j, ok := links[rp.Link]
		if !ok {
			e.add(fieldNode(n, "paths"), fmt.Sprintf("%s.paths[%d]", p, i), "link %q is not defined (links: %s)", rp.Link, strings.Join(keys(links), ", "))
		}
		hp := HostPath{Link: rp.Link, LinkIndex: j, Then: rp.Then, ThenIndex: -1, Backup: rp.Backup}
		if rp.Then != "" {
			t, ok := links[rp.Then]
			switch {
			case !ok:
				e.add(fieldNode(n, "paths"), fmt.Sprintf("%s.paths[%d].then", p, i), "link %q is not defined (links: %s)", rp.Then, strings.Join(keys(links), ", "))
			case rp.Then == rp.Link:
				e.add(fieldNode(n, "paths"), fmt.Sprintf("%s.paths[%d].then", p, i), "%q is the path's own link: name another link, or leave then out", rp.Then)
			}
			hp.ThenIndex = t
		}
		h.Paths = append(h.Paths, hp)
	}
	resolveHostMPTCP(e, &h, rh, fieldNode(n, "mptcp"), p+".mptcp")
	return h
}

// resolveHostMPTCP checks a host's mptcp: settings (n is their node).
func resolveHostMPTCP(e *errList, h *Host, rh rawHost, n *yaml.Node, p string) {
	switch h.Endpoints {
	case "":
		h.Endpoints = "subflow"
	case "subflow", "fullmesh", "none":
	default:
		e.add(n, p+".endpoints", "%q: want subflow (default), fullmesh or none", h.Endpoints)
	}
	switch h.PathManager {
	case "":
		h.PathManager = "kernel"
	case "kernel":
	case "mptcpd":
		// mptcpd's addr_adv gives every address of the host one set of
		// flags, taken from endpoints:.
		if h.Endpoints == "none" {
			e.add(n, p+".path_manager", "mptcpd adds an endpoint for every address, which endpoints: none forbids: drop one of the two")
		}
		for i, hp := range h.Paths {
			if hp.Backup {
				e.add(n, p+".path_manager", "paths[%d] is a backup path, but mptcpd gives every address the same flags: use path_manager: kernel for backup paths", i)
				break
			}
		}
	default:
		e.add(n, p+".path_manager", "%q: want kernel (default: endpoints added with ip mptcp) or mptcpd", h.PathManager)
	}
	if rh.MPTCP.JoinAfter != "" {
		d, err := ParseDuration(rh.MPTCP.JoinAfter)
		switch {
		case err != nil:
			e.add(n, p+".join_after", "%v", err)
		case d == 0:
			e.add(n, p+".join_after", "0: leave it out to join at once")
		case h.Endpoints == "none" || len(rh.Paths) < 2:
			e.add(n, p+".join_after", "nothing would join: the host needs a second path and endpoints other than none")
		}
		h.JoinAfter = d
	}
	if h.MaxSubflows < 0 || h.MaxSubflows > 8 {
		e.add(n, p+".subflows", "%d: want 0 to 8", h.MaxSubflows)
	}
	if h.AddAddrAccepted < 0 || h.AddAddrAccepted > 8 {
		e.add(n, p+".add_addr_accepted", "%d: want 0 to 8", h.AddAddrAccepted)
	}
}

// resolveRecord resolves record: (n is its node).
func resolveRecord(e *errList, n *yaml.Node, r rawRecord) Record {
	rec := Record{Sample: 100 * time.Millisecond, Kernel: true, BPF: true, Plots: true}
	if parseField(e, n, "record", "sample", r.Sample, ParseDuration, &rec.Sample) &&
		(rec.Sample < 10*time.Millisecond || rec.Sample > time.Minute) {
		e.add(fieldNode(n, "sample"), "record.sample", "%v: want 10ms to 1m", rec.Sample)
	}
	parseField(e, n, "record", "warmup", r.Warmup, ParseDuration, &rec.Warmup)
	for _, b := range []struct {
		set *bool
		to  *bool
	}{{r.Kernel, &rec.Kernel}, {r.BPF, &rec.BPF}, {r.Plots, &rec.Plots}} {
		if b.set != nil {
			*b.to = *b.set
		}
	}
	return rec
}

// resolveFlows resolves the flows into s.Flows.
func resolveFlows(e *errList, s *Scenario, root *yaml.Node, r *rawScenario, hosts, servers map[string]int) {
	define(e, &r.Flows, "flows", &s.Flows, func(en entry, p string) (Flow, bool) {
		var rf rawFlow
		if !e.decode(en.val, p, &rf) {
			return Flow{}, false
		}
		return resolveFlow(e, s, en.key, rf, en.val, p, hosts, servers), true
	})
	if len(s.Flows) == 0 {
		e.add(root, "flows", "define at least one flow (name: {from: HOST, to: SERVER, cc: reno, duration: 10s})")
	}
}

// parseField parses s, the value of key in the mapping n at path p, into
// *dst with parse; an error names the field. It reports whether s was
// given and parsed.
func parseField[T any](e *errList, n *yaml.Node, p, key, s string, parse func(string) (T, error), dst *T) bool {
	if s == "" {
		return false
	}
	v, err := parse(s)
	*dst = v
	if err != nil {
		if p != "" {
			key = p + "." + key
		}
		e.add(fieldNode(n, key[strings.LastIndexByte(key, '.')+1:]), key, "%v", err)
		return false
	}
	return true
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
