// SPDX-License-Identifier: Apache-2.0

package strictyaml

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

type testPath struct {
	Link string `yaml:"link"`
}

// UnmarshalYAML takes a bare link name too.
func (p *testPath) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return n.Decode(&p.Link)
	}
	var m map[string]string
	err := n.Decode(&m)
	p.Link = m["link"]
	return err
}

type testEntry struct {
	Name  string        `yaml:"name"`
	Every time.Duration `yaml:"every,omitempty"`
	On    bool          `yaml:"on"`
	Port  uint16        `yaml:"port"`
	Paths []testPath    `yaml:"paths"`
}

type testDoc struct {
	Title   string               `yaml:"title"`
	Entries []testEntry          `yaml:"entries"`
	Named   map[string]testEntry `yaml:"named"`
	Free    yaml.Node            `yaml:"free"`
	Opts    *struct {
		Count int `yaml:"count"`
	} `yaml:"opts"`
	Hidden string `yaml:"-"`
	Plain  string
}

func TestFields(t *testing.T) {
	got := Fields(reflect.TypeOf(&testDoc{}))
	want := []string{"title", "entries", "named", "free", "opts", "plain"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fields = %v, want %v", got, want)
	}
}

func TestDecode(t *testing.T) {
	ports := Decoder{Types: map[reflect.Type]string{reflect.TypeOf(uint16(0)): "a port number (0 to 65535)"}, AllowNull: true}
	for _, c := range []struct {
		name, in string
		ok       bool     // decoded (unknown keys alone leave it true)
		want     []string // one per problem: "line field: message part"; none: no problem
	}{
		{"valid", "title: t\nentries:\n  - {name: a, every: 1s, on: true, port: 80, paths: [x, {link: y}]}\nfree: {anything: [1, 2]}\n", true, nil},
		{"empty", "", true, nil},
		{"null section", "opts:\n", true, nil},
		{"null entry", "entries:\n  -\n", true, nil},
		{"top-level typo", "titel: t\n", true, []string{`1 titel: unknown field "titel" in the top level (known fields: title, entries, named, free, opts, plain); did you mean "title"?`}},
		{"entry typo", "entries:\n  - name: a\n    evry: 1s\n", true, []string{`3 entries[0].evry: unknown field "evry" in an entries entry (known fields: name, every, on, port, paths); did you mean "every"?`}},
		{"no suggestion", "entries:\n  - zzzzzz: 1\n", true, []string{`2 entries[0].zzzzzz: unknown field "zzzzzz" in an entries entry (known fields: name, every, on, port, paths)`}},
		{"map of structs", "named:\n  x: {nme: a}\n", true, []string{`2 named.x.nme: unknown field "nme" in named.x`, `did you mean "name"?`}},
		{"pointer to struct", "opts: {cont: 1}\n", true, []string{`1 opts.cont: unknown field "cont" in opts (known fields: count)`}},
		{"nested in a custom type", "entries:\n  - paths: [{lnk: y}]\n", true, []string{`2 entries[0].paths[0].lnk: unknown field "lnk"`}},
		{"not a mapping", "entries: [3]\n", false, []string{"1 entries[0]: want a mapping of name, every, on, port, paths"}},
		{"two problems", "titel: t\nentries:\n  - on: maybe\n", false, []string{`1 titel: unknown field "titel"`, `3 entries[0].on: "maybe" is not a boolean (true or false)`}},
		{"duration", "entries:\n  - every: 10\n", false, []string{`2 entries[0].every: "10" is not a duration (a number with a unit, e.g. 10ms or 1.5s)`}},
		{"described type", "entries:\n  - {name: a, port: 65536}\n", false, []string{`2 entries[0].port: "65536" is not a port number (0 to 65535)`}},
		{"integer", "opts: {count: many}\n", false, []string{`1 opts.count: "many" is not an integer`}},
		{"list", "entries: {name: a}\n", false, []string{"1 entries: want a list, not a mapping"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, probs := Parse([]byte(c.in))
			if len(probs) > 0 {
				t.Fatalf("parse: %v", probs)
			}
			var d testDoc
			probs, ok := ports.Decode(root, "", &d)
			if ok != c.ok {
				t.Errorf("decoded = %v, want %v", ok, c.ok)
			}
			var got []string
			for _, p := range probs {
				got = append(got, strings.TrimSpace(strings.Join([]string{strconv.Itoa(p.Line), p.Field + ":", p.Msg}, " ")))
			}
			if len(c.want) == 0 && len(got) > 0 {
				t.Fatalf("problems %q, want none", got)
			}
			all := strings.Join(got, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems\n%s\ndo not contain %q", all, w)
				}
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"syntax", "a: [\n  {b: c\n", "did not find expected"},
		{"tab", "a:\n\t- b\n", "(the line has a tab: YAML indents with spaces only)"},
		{"two documents", "a: 1\n---\na: 2\n", "more than one YAML document"},
	} {
		_, probs := Parse([]byte(c.in))
		if len(probs) == 0 || !strings.Contains(probs[0].String(), c.want) {
			t.Errorf("%s: problems %v, want %q", c.name, probs, c.want)
		}
	}
}

func TestLineAndfieldAt(t *testing.T) {
	doc := "a: 1\nlist:\n  - x: 1\n    y: 2\n  - {x: 3, y: 4}\nm:\n  k: v\nh: {paths: [a], count: many}\n"
	root, _ := Parse([]byte(doc))
	for field, want := range map[string]int{"a": 1, "list[0].y": 4, "list[1]": 5, "list[1].y": 5, "m.k": 7, "m.missing": 6, "": 0} {
		if got := Line(root, field); got != want {
			t.Errorf("Line(%q) = %d, want %d", field, got, want)
		}
	}
	for _, c := range []struct {
		line  int
		value string
		want  string
	}{{4, "", "list[0].y"}, {5, "4", "list[1].y"}, {5, "x", "list[1].x"}, {7, "v", "m.k"}, {8, "many", "h.count"}, {8, "a", "h.paths[0]"}} {
		if got := fieldAt(root, "", c.line, c.value); got != c.want {
			t.Errorf("fieldAt(line %d, %q) = %q, want %q", c.line, c.value, got, c.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "abc", 0}, {"lisaa", "lisa", 1}, {"rat", "rate", 1}, {"kitten", "sitting", 3}, {"", "abc", 3}} {
		if got := distance(c.a, c.b); got != c.d {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

// Without AllowNull, a key without a value is not an empty mapping.
func TestNullNotAllowed(t *testing.T) {
	root, _ := Parse([]byte("opts:\n"))
	var d testDoc
	probs, ok := Decode(root, "", &d)
	if !ok || len(probs) != 1 || probs[0].String() != "line 1: opts: want a mapping of count" {
		t.Errorf("problems %v (decoded %v), want one: want a mapping", probs, ok)
	}
}
