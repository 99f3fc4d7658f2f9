// SPDX-License-Identifier: Apache-2.0

package daemon

// Reading a configuration file: size bound, strict decoding, the
// problems it reports, and encoding one back.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mptcp-cc/mptcp-cc/internal/strictyaml"
)

// MaxConfigBytes bounds the size of a configuration file.
const MaxConfigBytes = 1 << 20

// Problem is one thing wrong with a configuration: its line (0 when
// unknown), its field (e.g. algorithms[1].algo; "" for the whole file) and
// what is wrong.
type Problem = strictyaml.Problem

// ConfigError lists every problem found in a configuration.
type ConfigError struct {
	File     string // "" when the config did not come from a file
	Problems []Problem
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	prefix := "config"
	if e.File != "" {
		prefix = e.File
	}
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(prefix)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
		if p.Field != "" {
			b.WriteString(p.Field)
			b.WriteString(": ")
		}
		b.WriteString(p.Msg)
	}
	return b.String()
}

// ParseConfig decodes and validates a configuration file. Unknown fields,
// wrong types and invalid values are errors (a *ConfigError naming the field
// and line of each problem). The result is not yet Resolved.
func ParseConfig(data []byte) (Config, error) { return ParseConfigWith(data, nil) }

// ParseConfigWith is ParseConfig with override applied (command-line flags)
// between decoding and validation.
func ParseConfigWith(data []byte, override func(*Config)) (Config, error) {
	var cfg Config
	if len(data) > MaxConfigBytes {
		return cfg, &ConfigError{Problems: []Problem{{Msg: fmt.Sprintf("the file is %d bytes; a configuration is at most %d", len(data), MaxConfigBytes)}}}
	}
	root, probs := strictyaml.Parse(data)
	if len(probs) > 0 {
		return cfg, &ConfigError{Problems: probs}
	}
	empty := len(root.Content) == 0 || root.Content[0].Kind == yaml.ScalarNode && root.Content[0].Tag == "!!null"
	if !empty && root.Content[0].Kind != yaml.MappingNode {
		return cfg, &ConfigError{Problems: []Problem{{Line: root.Content[0].Line, Msg: "the configuration must be a mapping (key: value lines), e.g. `algorithms: [{algo: olia}]`"}}}
	}
	if !empty {
		if probs, _ := configDecoder.Decode(root, "", &cfg); len(probs) > 0 {
			return Config{}, &ConfigError{Problems: probs}
		}
	}
	// An empty list and an absent one mean the same.
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = nil
	}
	if len(cfg.Policies) == 0 {
		cfg.Policies = nil
	}
	if len(cfg.Events.Namespaces) == 0 {
		cfg.Events.Namespaces = nil
	}
	if len(cfg.Schedulers) == 0 {
		cfg.Schedulers = nil
	}
	if len(cfg.NetnsSchedulers) == 0 {
		cfg.NetnsSchedulers = nil
	}
	if len(cfg.Pathctl.Namespaces) == 0 {
		cfg.Pathctl.Namespaces = nil
	}
	if len(cfg.Pathctl.Peers) == 0 {
		cfg.Pathctl.Peers = nil
	}
	if len(cfg.Pathctl.Ports) == 0 {
		cfg.Pathctl.Ports = nil
	}
	if override != nil {
		override(&cfg)
	}
	if probs := cfg.validate(); len(probs) > 0 {
		for i := range probs {
			if probs[i].Line == 0 {
				probs[i].Line = strictyaml.Line(root, probs[i].Field)
			}
		}
		return Config{}, &ConfigError{Problems: probs}
	}
	return cfg, nil
}

// ReadConfigFile reads and parses a configuration file (ParseConfigWith);
// a *ConfigError names the file. It is what the daemon reads at start and
// at every reload, so both refuse a file with the same messages as
// --config.check.
func ReadConfigFile(file string, override func(*Config)) (Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Config{}, fmt.Errorf("reading the configuration: %w", err)
	}
	cfg, err := ParseConfigWith(data, override)
	var ce *ConfigError
	if errors.As(err, &ce) {
		ce.File = file
	}
	return cfg, err
}

// Validate checks a configuration that did not come from a file (or was
// changed by flags after parsing).
func (c Config) Validate() error {
	if probs := c.validate(); len(probs) > 0 {
		return &ConfigError{Problems: probs}
	}
	return nil
}

// configDecoder says what the one field whose Go type says too little is;
// an empty section (metrics: with nothing under it) is fine.
var configDecoder = strictyaml.Decoder{Types: map[reflect.Type]string{
	reflect.TypeOf(uint16(0)): "a port number (0 to 65535)",
}, AllowNull: true}

// Marshal encodes the configuration as YAML (for `serve --config.check -v`
// and the fuzz round trip).
func (c Config) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}
