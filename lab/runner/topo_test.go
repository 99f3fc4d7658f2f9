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
