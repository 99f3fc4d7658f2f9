// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mptcp-cc/mptcp-cc/lab/linkem"
)

// rawAQM is a link's aqm: a bare name ("red") or a mapping with the
// parameters ({kind: codel, target: 5ms}).
type rawAQM struct {
	Kind     string  `yaml:"kind"`
	MinTh    float64 `yaml:"min_th"` // packets
	MaxTh    float64 `yaml:"max_th"` // packets
	Wq       float64 `yaml:"w_q"`
	MaxP     float64 `yaml:"max_p"`
	Target   string  `yaml:"target"`
	Interval string  `yaml:"interval"`
	Flows    int     `yaml:"flows"`
	Quantum  int     `yaml:"quantum"` // bytes
}

// UnmarshalYAML accepts a bare AQM name.
func (a *rawAQM) UnmarshalYAML(n *yaml.Node) error {
	type plain rawAQM
	return scalarOrMapping(n, &a.Kind, (*plain)(a))
}

// aqmNames maps the scenario's names to linkem's kinds; droptail names
// the default, so a variant or sweep can go back to it.
var aqmNames = map[string]string{"droptail": linkem.DropTail, "red": linkem.RED, "codel": linkem.CoDel, "fq_codel": linkem.FQCoDel}

// ParseAQMName parses droptail, red, codel or fq_codel into a linkem kind.
func ParseAQMName(s string) (string, error) {
	k, ok := aqmNames[strings.ToLower(strings.TrimSpace(s))]
	if !ok {
		return "", fmt.Errorf("aqm %q: want droptail, red, codel or fq_codel", s)
	}
	return k, nil
}

// resolveAQM checks a link's aqm (n is its node, p its path).
func resolveAQM(e *errList, ra rawAQM, n *yaml.Node, p string) linkem.AQM {
	kind, err := ParseAQMName(ra.Kind)
	if err != nil {
		e.add(n, p, "%v", err)
		return linkem.AQM{}
	}
	a := linkem.AQM{Kind: kind, MinTh: ra.MinTh, MaxTh: ra.MaxTh, Wq: ra.Wq, MaxP: ra.MaxP, Flows: ra.Flows, Quantum: ra.Quantum}
	parseField(e, n, p, "target", ra.Target, ParseDuration, &a.Target)
	parseField(e, n, p, "interval", ra.Interval, ParseDuration, &a.Interval)
	if err := (linkem.DirectionConfig{AQM: a}).Validate(); err != nil {
		e.add(n, p, "%s", strings.TrimPrefix(err.Error(), "linkem: "))
		return linkem.AQM{}
	}
	return a
}
