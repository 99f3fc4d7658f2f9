// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"testing"

	"github.com/mptcp-cc/mptcp-cc/lab/linkem"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
)

// A link's aqm reaches the topology's shaping, for access and server
// links alike, with the queue as its hard limit.
func TestTopoConfigCarriesAQM(t *testing.T) {
	f, err := scenario.Parse("aqm.yaml", []byte(`
name: aqm
links:
  a: {rate: 10Mbit, queue: 50pkt, aqm: {kind: codel, target: 2ms}}
  b: {rate: 10Mbit}
servers:
  s: {link: {rate: 20Mbit, aqm: fq_codel}}
hosts:
  h: {paths: [a, b]}
flows:
  f: {from: h, to: s, cc: lia, duration: 5s}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := TopoConfig(f.Cases[0].Scenario, 0, "x")
	if err != nil {
		t.Fatal(err)
	}
	a, b, s := cfg.Links[0].Shaping, cfg.Links[1].Shaping, cfg.Servers[0].Link
	if a.AQM != (linkem.AQM{Kind: linkem.CoDel, Target: 2e6}) || a.QueueBytes != 50*1500 {
		t.Errorf("link a: AQM %+v, queue %d bytes", a.AQM, a.QueueBytes)
	}
	if b.AQM != (linkem.AQM{}) || s.AQM != (linkem.AQM{Kind: linkem.FQCoDel}) {
		t.Errorf("link b AQM %+v, server link AQM %+v", b.AQM, s.AQM)
	}
}

// A chained path reaches the topology as its second link, and its longer
// base RTT (both links' delays, twice) sizes the BDP queues of both links.
func TestTopoConfigChainedPath(t *testing.T) {
	f, err := scenario.Parse("chain.yaml", []byte(`
name: chain
links:
  x: {rate: 8Mbit, delay: 20ms, queue: 1bdp}
  t: {rate: 8Mbit, delay: 30ms, queue: 1bdp}
servers:
  s: {}
hosts:
  h: {paths: [t, {link: x, then: t}]}
flows:
  f: {from: h, to: s, cc: lia, duration: 5s}
`))
	if err != nil {
		t.Fatal(err)
	}
	sc := f.Cases[0].Scenario
	if p := sc.Hosts[0].Paths; p[0].ThenIndex != -1 || p[1].ThenIndex != 1 || p[1].Name() != "x+t" || p[0].Name() != "t" {
		t.Fatalf("paths %+v", p)
	}
	cfg, err := TopoConfig(sc, 0, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Hosts[0].Then; len(got) != 2 || got[0] != -1 || got[1] != 1 {
		t.Errorf("Then %v, want [-1 1]", got)
	}
	// 8 Mbit/s x 100 ms (2 x (20 + 30) ms) = 100000 bytes on both links.
	if x, tq := cfg.Links[0].QueueBytes, cfg.Links[1].QueueBytes; x != 100000 || tq != 100000 {
		t.Errorf("queues %d and %d bytes, want 100000 (one BDP of the chained path)", x, tq)
	}
}
