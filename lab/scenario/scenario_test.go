// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/linkem"
)

func TestUnits(t *testing.T) {
	rates := map[string]uint64{"10Mbit": 10e6, "10 Mbps": 10e6, "500kbit": 500e3, "1.5G": 1.5e9, "2000000": 2e6, "10Mbit/s": 10e6}
	for s, want := range rates {
		if got, err := ParseRate(s); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"10MB", "fast", "-1Mbit", "10 furlongs"} {
		if _, err := ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) accepted", s)
		}
	}
	sizes := map[string]int64{"100KB": 100e3, "10MB": 10e6, "1MiB": 1 << 20, "1500B": 1500, "1500": 1500, "1.5 KB": 1500}
	for s, want := range sizes {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	if _, err := ParseSize("3 pints"); err == nil {
		t.Error("ParseSize accepted a unit it does not know")
	}
	probs := map[string]float64{"2%": 0.02, "0.1": 0.1, "0": 0, "100%": 1}
	for s, want := range probs {
		if got, err := ParseProb(s); err != nil || math.Abs(got-want) > 1e-12 {
			t.Errorf("ParseProb(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"110%", "-0.1", "lots"} {
		if _, err := ParseProb(s); err == nil {
			t.Errorf("ParseProb(%q) accepted", s)
		}
	}
	queues := map[string]Queue{"100pkt": {Packets: 100}, "50 packets": {Packets: 50}, "150KB": {Bytes: 150e3}, "1bdp": {BDP: 1}, "0.5bdp": {BDP: 0.5}}
	for s, want := range queues {
		if got, err := ParseQueue(s); err != nil || got != want {
			t.Errorf("ParseQueue(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"0pkt", "-1bdp", "big"} {
		if _, err := ParseQueue(s); err == nil {
			t.Errorf("ParseQueue(%q) accepted", s)
		}
	}
	if d, err := ParseDuration("150ms"); err != nil || d != 150*time.Millisecond {
		t.Errorf("ParseDuration: %v %v", d, err)
	}
	if _, err := ParseDuration("150"); err == nil {
		t.Error("a duration without a unit was accepted")
	}
}

const good = `
name: t
links:
  a: {rate: 10Mbit, delay: 20ms, loss: 1%, queue: 1bdp}
  b: {rate: 5Mbit}
servers:
  s: {link: {rate: 20Mbit}}
hosts:
  h: {count: 2, paths: [a, {link: b, backup: true}], mptcp: {endpoints: fullmesh, join_after: 2s}}
flows:
  f: {from: h, to: s, cc: olia+lisa, duration: 5s, count: 3}
  g: {from: h, protocol: tcp, cc: cubic, bytes: 1MB, start: 1s, path: 1}
variants:
  - {name: lia, set: {flows.f.cc: lia}}
  - {name: rsf, set: {flows.f.cc: {algo: rsf, rsf_target: 5ms}}}
sweep:
  set: [links.a.delay, links.b.delay]
  values: [10ms, 40ms]
record: {sample: 50ms, warmup: 1s}
`

// Pacing is a parameter of ours, as a suffix or in the mapping, and tells
// the loads apart.
func TestParsePacing(t *testing.T) {
	src := strings.Replace(good, "{algo: rsf, rsf_target: 5ms}", "{algo: rsf, pacing: true, rsf_target: 5ms}", 1)
	f, err := Parse("pacing.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.Cases[0].Scenario.Flows[0].CC, (CCSpec{Name: "lia", Algo: "lia"}); got != want {
		t.Errorf("variant lia: %+v, want %+v", got, want)
	}
	rsf := f.Cases[3].Scenario.Flows[0].CC
	if want := (CCSpec{Name: "rsf", Algo: "rsf", Pacing: true, RSFTarget: 5 * time.Millisecond}); rsf != want {
		t.Errorf("variant rsf: %+v, want %+v", rsf, want)
	}
	if s := rsf.String(); s != "rsf+pacing(target=5ms)" {
		t.Errorf("rsf spec prints as %q", s)
	}
	// Without the variants, flow f runs the spec it is given.
	plain := good[:strings.Index(good, "variants:")] + good[strings.Index(good, "sweep:"):]
	one, err := Parse("pacing.yaml", []byte(strings.Replace(plain, "cc: olia+lisa,", "cc: olia+lisa+pacing,", 1)))
	if err != nil {
		t.Fatal(err)
	}
	cc := one.Cases[0].Scenario.Flows[0].CC
	if want := (CCSpec{Name: "olia", Algo: "olia", LISA: true, Pacing: true}); cc != want || cc.String() != "olia+lisa+pacing" {
		t.Errorf("olia+lisa+pacing: %+v (%s)", cc, cc)
	}
}

func TestParseGood(t *testing.T) {
	f, err := Parse("good.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) != 4 {
		t.Fatalf("%d cases, want 2 variants x 2 sweep values", len(f.Cases))
	}
	var ids []string
	for _, c := range f.Cases {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, " ") != "lia@10ms lia@40ms rsf@10ms rsf@40ms" {
		t.Errorf("case ids %v", ids)
	}
	c := f.Cases[3].Scenario
	if pm := c.Hosts[0].PathManager; pm != "kernel" {
		t.Errorf("path_manager defaults to %q, want kernel", pm)
	}
	if c.Links[0].Delay != 40*time.Millisecond || c.Links[1].Delay != 40*time.Millisecond {
		t.Errorf("sweep did not set both delays: %+v", c.Links)
	}
	if c.Flows[0].CC != (CCSpec{Name: "rsf", Algo: "rsf", RSFTarget: 5 * time.Millisecond}) {
		t.Errorf("variant cc: %+v", c.Flows[0].CC)
	}
	if got := f.Cases[0].Scenario.Flows[0].CC; got != (CCSpec{Name: "lia", Algo: "lia"}) {
		t.Errorf("variant lia: %+v", got)
	}
	h := c.Hosts[0]
	if h.Count != 2 || len(h.Paths) != 2 || !h.Paths[1].Backup || h.Paths[1].LinkIndex != 1 || h.Endpoints != "fullmesh" || h.JoinAfter != 2*time.Second {
		t.Errorf("host: %+v", h)
	}
	g := c.Flows[1]
	if g.MPTCP || g.CC.Ours() || g.CC.Name != "cubic" || g.Bytes != 1e6 || g.Start != time.Second || g.Path != 1 || g.Tool != "xfer" {
		t.Errorf("flow g: %+v", g)
	}
	if c.Links[0].Queue.BDP != 1 || c.Links[0].Loss != 0.01 || c.Servers[0].Link.Rate != 20e6 {
		t.Errorf("links: %+v servers %+v", c.Links, c.Servers)
	}
	specs := f.Algorithms()
	var names []string
	for _, s := range specs {
		names = append(names, s.String())
	}
	if strings.Join(names, ",") != "lia,rsf(target=5ms)" {
		t.Errorf("algorithms to load: %v", names)
	}
	// Base without variants: the flow keeps olia+lisa.
	base, err := Parse("b.yaml", []byte(strings.Split(good, "variants:")[0]))
	if err != nil {
		t.Fatal(err)
	}
	if cc := base.Cases[0].Scenario.Flows[0].CC; cc.String() != "olia+lisa" || !cc.LISA {
		t.Errorf("base cc %+v", cc)
	}
}

func TestParseAQM(t *testing.T) {
	const doc = `
name: q
links:
  a: {rate: 10Mbit, delay: 10ms, queue: 100pkt, aqm: red}
  b: {rate: 10Mbit, aqm: {kind: fq_codel, target: 10ms, interval: 200ms, flows: 64, quantum: 300}}
  c: {rate: 10Mbit, aqm: {kind: red, min_th: 10, max_p: 0.2}}
servers:
  s: {}
hosts:
  h: {paths: [a, b, c]}
flows:
  f: {from: h, to: s, cc: lia, duration: 5s}
sweep:
  set: [links.a.aqm]
  values: [droptail, codel]
`
	f, err := Parse("q.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) != 2 {
		t.Fatalf("%d cases, want one per aqm", len(f.Cases))
	}
	a0, a1 := f.Cases[0].Scenario.Links[0], f.Cases[1].Scenario.Links[0]
	if a0.AQM != (linkem.AQM{}) || a0.Emulated() != true || a1.AQM != (linkem.AQM{Kind: linkem.CoDel}) {
		t.Errorf("sweep over links.a.aqm: %+v, %+v", a0.AQM, a1.AQM)
	}
	l := f.Cases[0].Scenario.Links
	if want := (linkem.AQM{Kind: linkem.FQCoDel, Target: 10 * time.Millisecond, Interval: 200 * time.Millisecond, Flows: 64, Quantum: 300}); l[1].AQM != want {
		t.Errorf("link b: %+v, want %+v", l[1].AQM, want)
	}
	if want := (linkem.AQM{Kind: linkem.RED, MinTh: 10, MaxP: 0.2}); l[2].AQM != want {
		t.Errorf("link c: %+v, want %+v", l[2].AQM, want)
	}
	// An AQM alone makes the link emulated: tbf cannot do it.
	if !(Link{Rate: 1e6, AQM: linkem.AQM{Kind: linkem.RED}}).Emulated() || (Link{Rate: 1e6}).Emulated() {
		t.Error("Emulated does not follow the AQM")
	}
}

// badEdits turn the good scenario into a bad one ("from->to") and list
// what the error must say; FuzzParse starts from them too.
var badEdits = []struct {
	name, edit string
	want       []string
}{
	{"unknown field", "rate: 10Mbit, delay: 20ms, loss: 1%, queue: 1bdp}->rat: 10Mbit, delay: 20ms, loss: 1%, queue: 1bdp}",
		[]string{"x.yaml:4", "links.a.rat", "unknown field", "rate, delay"}},
	{"undefined link", "paths: [a, {link: b->paths: [a, {link: c", []string{"hosts.h.paths[1]", `link "c" is not defined`, "a, b"}},
	{"undefined then-link", "paths: [a, {link: b->paths: [a, {then: c, link: b", []string{"hosts.h.paths[1].then", `link "c" is not defined`}},
	{"then-link is the path's own", "paths: [a, {link: b->paths: [a, {then: b, link: b", []string{"hosts.h.paths[1].then", "the path's own link"}},
	{"bad rate", "b: {rate: 5Mbit}->b: {rate: 5MB}", []string{"links.b.rate", "bits"}},
	{"loss", "loss: 1%->loss: 120%", []string{"links.a.loss", "outside [0, 1]"}},
	{"both sizes", "bytes: 1MB->bytes: 1MB, duration: 2s", []string{"flows.g", "bytes or duration, not both"}},
	{"neither size", ", duration: 5s, count: 3->, count: 3", []string{"flows.f", "give bytes"}},
	{"unknown cc algo", "{algo: rsf, rsf_target: 5ms}->{algo: rfs, rsf_target: 5ms}", []string{"flows.f.cc.algo", "unknown algorithm"}},
	{"lisa on kernel cc", "cc: cubic->cc: cubic+lisa", []string{"flows.g.cc", "+lisa composes with our algorithms only"}},
	{"target on olia", "{algo: rsf, rsf_target: 5ms}->{algo: olia, rsf_target: 5ms}", []string{"flows.f.cc.rsf_target", "only rsf"}},
	{"target zero", "{algo: rsf, rsf_target: 5ms}->{algo: rsf, rsf_target: 0s}", []string{"flows.f.cc.rsf_target", "0s is out of range"}},
	{"pacing on kernel cc", "cc: cubic->cc: cubic+pacing", []string{"flows.g.cc", "+pacing composes with our algorithms only"}},
	{"unknown cc suffix", "cc: cubic->cc: cubic+fast", []string{"flows.g.cc", "+fast is not a parameter (+lisa, +pacing)"}},
	{"bad host", "from: h, to: s->from: x, to: s", []string{"flows.f.from", `host "x" is not defined`}},
	{"bad path", "path: 1->path: 2", []string{"flows.g.path", "paths 0 to 1"}},
	{"bad protocol", "protocol: tcp->protocol: sctp", []string{"flows.g.protocol", "mptcp or tcp"}},
	{"bad tool", "cc: cubic,->cc: cubic, tool: wget,", []string{"flows.g.tool", "xfer"}},
	{"variant typo", "flows.f.cc: lia->flows.ff.cc: lia", []string{"variants[0].set", `flows has no "ff"`, "it has: f, g"}},
	{"warmup", "warmup: 1s->warmup: 5s", []string{"flows.f.duration", "not longer than record.warmup"}},
	{"endpoints", "endpoints: fullmesh->endpoints: signal", []string{"hosts.h.mptcp.endpoints"}},
	{"join_after unit", "join_after: 2s->join_after: 2", []string{"hosts.h.mptcp.join_after"}},
	{"join_after negative", "join_after: 2s->join_after: -2s", []string{"hosts.h.mptcp.join_after", "negative"}},
	{"join_after nothing to join", "endpoints: fullmesh,->endpoints: none,", []string{"hosts.h.mptcp.join_after", "nothing would join"}},
	{"path_manager", "endpoints: fullmesh,->endpoints: fullmesh, path_manager: daemon,", []string{"hosts.h.mptcp.path_manager", `"daemon": want kernel (default`}},
	{"mptcpd with backup", "endpoints: fullmesh,->endpoints: fullmesh, path_manager: mptcpd,", []string{"hosts.h.mptcp.path_manager", "paths[1] is a backup path"}},
	{"mptcpd without endpoints", "mptcp: {endpoints: fullmesh, join_after: 2s}->mptcp: {endpoints: none, path_manager: mptcpd}", []string{"hosts.h.mptcp.path_manager", "endpoints: none forbids"}},
	{"path_manager on a server", "s: {link: {rate: 20Mbit}}->s: {link: {rate: 20Mbit}, mptcp: {path_manager: mptcpd}}", []string{"servers.s.mptcp", "path_manager are host settings"}},
	{"count", "count: 2->count: 300", []string{"hosts.h.count"}},
	{"sample", "sample: 50ms->sample: 1ms", []string{"record.sample"}},
	{"no name", "name: t->description: t", []string{"name", "required"}},
	{"bad sysctl", "record:->sysctls: [tcp_wmem]\nrecord:", []string{"sysctls[0]", "key=value"}},
	{"aqm kind", "b: {rate: 5Mbit}->b: {rate: 5Mbit, aqm: pie}", []string{"x.yaml:5", "links.b.aqm", "want droptail, red, codel or fq_codel"}},
	{"aqm without a bottleneck", "s: {link: {rate: 20Mbit}}->s: {link: {delay: 5ms, aqm: codel}}", []string{"servers.s.link.aqm", "needs a rate or a trace"}},
	{"aqm thresholds", "b: {rate: 5Mbit}->b: {rate: 5Mbit, aqm: {kind: red, min_th: 20, max_th: 10}}", []string{"links.b.aqm", "max_th 10 must be above min_th 20"}},
	{"aqm field typo", "b: {rate: 5Mbit}->b: {rate: 5Mbit, aqm: {kind: codel, taget: 5ms}}", []string{"links.b.aqm.taget", "unknown field", `did you mean "target"`}},
	{"aqm parameter of another kind", "b: {rate: 5Mbit}->b: {rate: 5Mbit, aqm: {kind: codel, max_p: 0.2}}", []string{"links.b.aqm", "codel takes target and interval"}},
	{"aqm duration", "b: {rate: 5Mbit}->b: {rate: 5Mbit, aqm: {kind: fq_codel, target: 5}}", []string{"links.b.aqm.target", "duration"}},
}

// applyEdit returns the good scenario with edit ("from->to") applied.
func applyEdit(t testing.TB, name, edit string) []byte {
	from, to, _ := strings.Cut(edit, "->")
	if !strings.Contains(good, from) {
		t.Fatalf("%s: %q is not in the scenario", name, from)
	}
	return []byte(strings.Replace(good, from, to, 1))
}

// Every mistake is an error that names the file, the line and the field.
func TestParseErrors(t *testing.T) {
	for _, c := range badEdits {
		_, err := Parse("x.yaml", applyEdit(t, c.name, c.edit))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", c.name, err, w)
			}
		}
	}
}

// The scenario files in the repository are valid.
func TestScenarioFilesValid(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/scenarios/*.yaml")
	more, _ := filepath.Glob("../../testdata/scenarios/*/*.yaml")
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("found only %d scenario files", len(files))
	}
	for _, p := range files {
		f, err := Load(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if len(f.Cases) == 0 {
			t.Errorf("%s: no cases", p)
		}
	}
}
