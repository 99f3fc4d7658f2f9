// SPDX-License-Identifier: Apache-2.0

package scenario

import "gopkg.in/yaml.v3"

// The raw YAML forms, decoded strictly (internal/strictyaml) before they
// are resolved into a Scenario.

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
	Rate   string  `yaml:"rate"`
	Delay  string  `yaml:"delay"`
	Loss   string  `yaml:"loss"`
	Jitter string  `yaml:"jitter"`
	Queue  string  `yaml:"queue"`
	Trace  string  `yaml:"trace"`
	AQM    *rawAQM `yaml:"aqm"`
}

type rawMPTCP struct {
	Endpoints       string `yaml:"endpoints"`
	PathManager     string `yaml:"path_manager"`
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
	Then   string `yaml:"then"`
	Backup bool   `yaml:"backup"`
}

// UnmarshalYAML accepts a bare link name for a path.
func (p *rawPath) UnmarshalYAML(n *yaml.Node) error {
	type plain rawPath
	return scalarOrMapping(n, &p.Link, (*plain)(p))
}

// scalarOrMapping sets *scalar to n's value when n is a scalar (the short
// form of a field), and decodes the mapping into plain otherwise.
func scalarOrMapping(n *yaml.Node, scalar *string, plain any) error {
	if n.Kind == yaml.ScalarNode {
		*scalar = n.Value
		return nil
	}
	return n.Decode(plain)
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
	Pacing    bool   `yaml:"pacing"`
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
