// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Variants and sweeps are overrides of the base scenario: dotted field
// paths set to new values in the YAML tree before it is resolved.
type override struct {
	path  string
	value *yaml.Node
	where string
}

// overrides reads a variant's set: mapping; problems go to e, which names
// the file, like every other error of a scenario.
func overrides(e *errList, n yaml.Node, where string) []override {
	if n.Kind == 0 {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		e.add(&n, where, "want a mapping of dotted field paths to values, e.g. flows.mp.cc: olia")
		return nil
	}
	var out []override
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, override{path: n.Content[i].Value, value: n.Content[i+1], where: where})
	}
	return out
}

// apply sets the dotted path in the scenario tree. Every part but the last
// must exist, so a misspelt link or flow name is an error (added to e), not
// a new entry.
func (o override) apply(root *yaml.Node, e *errList) {
	parts := strings.Split(o.path, ".")
	cur := root
	for i, p := range parts {
		if cur.Kind != yaml.MappingNode {
			e.add(o.value, o.where, "%s: %s is not a mapping", o.path, strings.Join(parts[:i], "."))
			return
		}
		var next *yaml.Node
		for j := 0; j+1 < len(cur.Content); j += 2 {
			if cur.Content[j].Value == p {
				next = cur.Content[j+1]
				if i == len(parts)-1 {
					cur.Content[j+1] = cloneNode(o.value)
					return
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
				e.add(o.value, o.where, "%s: %s has no %q (it has: %s)", o.path, where, p, strings.Join(have, ", "))
				return
			}
			cur.Content = append(cur.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p}, cloneNode(o.value))
			return
		}
		cur = next
	}
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
