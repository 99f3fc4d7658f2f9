// SPDX-License-Identifier: Apache-2.0

// Package strictyaml decodes YAML into tagged Go structs strictly, with
// messages for people: a key that names no field is an error that gives
// the field's path, its line, the fields that exist there and the closest
// one; yaml.v3's type errors ("cannot unmarshal !!str `x` into
// time.Duration") become "\"x\" is not a duration (...)".
//
// The known fields are read from the structs' yaml tags, so adding a field
// to a configuration is one edit: the struct field.
package strictyaml

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Problem is one thing wrong in a document.
type Problem struct {
	Line  int    // 1-based; 0 when unknown
	Field string // path of the field, e.g. links.a.rate, policies[1].dst; "" for the document
	Msg   string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Fields lists the YAML keys of struct type t, from its yaml tags (or the
// lower-cased field name, as yaml.v3 does), in declaration order.
func Fields(t reflect.Type) []string {
	t = deref(t)
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if k, ok := key(t.Field(i)); ok {
			out = append(out, k)
		}
	}
	return out
}

// key is the YAML key of a struct field; false for skipped fields.
func key(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
	switch tag {
	case "-":
		return "", false
	case "":
		return strings.ToLower(f.Name), true
	}
	return tag, true
}

func fieldByKey(t reflect.Type, k string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if fk, ok := key(t.Field(i)); ok && fk == k {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

var (
	nodeType        = reflect.TypeOf(yaml.Node{})
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
)

// Check returns a problem for every mapping key in n that names no field
// of t, recursively through structs, pointers, slices and maps. path is
// n's own path ("" for the top level). yaml.Node fields are free-form and
// not looked into; a type with its own UnmarshalYAML may take a scalar.
func Check(n *yaml.Node, t reflect.Type, path string) []Problem { return Decoder{}.Check(n, t, path) }

// Check is the package's Check with d's settings.
func (d Decoder) Check(n *yaml.Node, t reflect.Type, path string) []Problem {
	c := checker{d: d}
	c.check(n, t, path)
	return c.out
}

type checker struct {
	d   Decoder
	out []Problem
}

func (c *checker) check(n *yaml.Node, t reflect.Type, path string) {
	t = deref(t)
	if n == nil || n.Kind == 0 || t == nodeType {
		return
	}
	if n.Kind == yaml.DocumentNode {
		for _, k := range n.Content {
			c.check(k, t, path)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		c.checkStruct(n, t, path)
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			for i, k := range n.Content {
				c.check(k, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				c.check(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))
			}
		}
	}
}

func (c *checker) checkStruct(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		custom := reflect.PointerTo(t).Implements(unmarshalerType)
		if !custom && !(c.d.AllowNull && isNull(n)) {
			c.out = append(c.out, Problem{Line: n.Line, Field: path, Msg: "want a mapping of " + strings.Join(Fields(t), ", ")})
		}
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f, ok := fieldByKey(t, k.Value)
		if !ok {
			c.out = append(c.out, Problem{Line: k.Line, Field: join(path, k.Value), Msg: unknownField(k.Value, path, Fields(t))})
			continue
		}
		c.check(v, f.Type, join(path, k.Value))
	}
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// unknownField is the message for key k in the mapping at path.
func unknownField(k, path string, known []string) string {
	msg := fmt.Sprintf("unknown field %q in %s (known fields: %s)", k, section(path), strings.Join(known, ", "))
	if s := closest(k, known); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return msg
}

// section names the mapping at path: "the top level", "an algorithms
// entry" (algorithms[2]), "metrics".
func section(path string) string {
	if path == "" {
		return "the top level"
	}
	if i := strings.LastIndexByte(path, '['); i > 0 && strings.HasSuffix(path, "]") {
		name := path[:i]
		name = name[strings.LastIndexByte(name, '.')+1:]
		article := "a"
		if strings.ContainsRune("aeiou", rune(name[0])) {
			article = "an"
		}
		return article + " " + name + " entry"
	}
	return path
}

// closest is the known field nearest to k by edit distance, if it is near
// enough to be a typo.
func closest(k string, known []string) string {
	best, bestD := "", len(k)/2+1
	for _, c := range known {
		if d := distance(k, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance (bytes; keys are ASCII).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Decoder decodes strictly. The zero value is ready to use.
type Decoder struct {
	// Types describes Go types in messages where the default (by kind:
	// "an integer", "a string", ...) says too little, e.g. a uint16 that is
	// a port number.
	Types map[reflect.Type]string
	// AllowNull lets a key without a value (null) stand for an empty
	// mapping; by default it is a problem ("want a mapping of ...").
	AllowNull bool
}

// Decode checks n against v's type (Check) and decodes it into v (a
// pointer), filling in what it can. path is n's own path, for messages.
// The problems come in line order; decoded is false when a value did not
// fit its field (unknown keys alone leave it true).
func Decode(n *yaml.Node, path string, v any) (probs []Problem, decoded bool) {
	return Decoder{}.Decode(n, path, v)
}

// Decode is the package's Decode with d's type descriptions.
func (d Decoder) Decode(n *yaml.Node, path string, v any) (probs []Problem, decoded bool) {
	if n == nil || n.Kind == 0 {
		return nil, true // an empty document
	}
	probs = d.Check(n, reflect.TypeOf(v), path)
	if err := n.Decode(v); err != nil {
		probs = append(probs, d.problems(err, n, path, reflect.TypeOf(v))...)
		sortByLine(probs)
		return probs, false
	}
	return probs, true
}

var (
	lineRe = regexp.MustCompile(`^line (\d+): (.*)$`)
	typeRe = regexp.MustCompile("^cannot unmarshal (!!\\w+) `(.*)` into (\\S+)$")
	kindRe = regexp.MustCompile(`^cannot unmarshal (!!\w+) into (\S+)$`)
)

// problems turns a yaml.v3 error from decoding n (whose path is path) into
// t into problems with clear messages; n and t are nil for a syntax error.
func (d Decoder) problems(err error, n *yaml.Node, path string, t reflect.Type) []Problem {
	var lines []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		lines = te.Errors
	} else {
		lines = []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	types := d.goTypes(t)
	var out []Problem
	for _, l := range lines {
		p := Problem{Msg: l}
		if m := lineRe.FindStringSubmatch(l); m != nil {
			p.Line, _ = strconv.Atoi(m[1])
			p.Msg = m[2]
		}
		value := ""
		if m := typeRe.FindStringSubmatch(p.Msg); m != nil {
			p.Msg, value = fmt.Sprintf("%q is not %s", m[2], d.describe(types[m[3]], m[3])), m[2]
		} else if m := kindRe.FindStringSubmatch(p.Msg); m != nil {
			kind, ok := yamlKinds[m[1]]
			if !ok {
				kind = m[1]
			}
			p.Msg = fmt.Sprintf("want %s, not %s", d.describe(types[m[2]], m[2]), kind)
		}
		if n != nil && p.Line > 0 {
			p.Field = fieldAt(n, path, p.Line, value)
		}
		out = append(out, p)
	}
	return out
}

// goTypes maps the names yaml.v3 gives types (reflect's String) to the
// types reachable from t.
func (d Decoder) goTypes(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		if t == nil || out[t.String()] != nil {
			return
		}
		out[t.String()] = t
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(t.Elem())
		case reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				walk(t.Field(i).Type)
			}
		}
	}
	walk(t)
	return out
}

// yamlKinds names the kinds of YAML node in messages.
var yamlKinds = map[string]string{"!!map": "a mapping", "!!seq": "a list", "!!str": "a string"}

var durationType = reflect.TypeOf(time.Duration(0))

// describe says what a value of t is, in words ("a boolean (true or
// false)"); name is the type's name for types not reachable from the
// decoded one.
func (d Decoder) describe(t reflect.Type, name string) string {
	if t == nil {
		return "a " + name
	}
	if s, ok := d.Types[t]; ok {
		return s
	}
	if t == durationType {
		return "a duration (a number with a unit, e.g. 10ms or 1.5s)"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return d.describe(t.Elem(), t.Elem().String())
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "a mapping"
}

// Parse parses a document, turning syntax errors into problems (with a
// hint when the line has a tab). A second document is a problem: what is
// read is one document.
func Parse(data []byte) (*yaml.Node, []Problem) {
	var root yaml.Node
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		probs := Decoder{}.problems(err, nil, "", nil)
		lines := strings.Split(string(data), "\n")
		for i, p := range probs {
			if p.Line > 0 && p.Line <= len(lines) && strings.ContainsRune(lines[p.Line-1], '\t') {
				probs[i].Msg += " (the line has a tab: YAML indents with spaces only)"
			}
		}
		return nil, probs
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, []Problem{{Line: extra.Line, Msg: "more than one YAML document; a file is one document"}}
	}
	return &root, nil
}

// Line finds the line of a field path (as in Problem.Field) in the
// document: the closest existing ancestor's when the field is absent.
func Line(root *yaml.Node, field string) int {
	if root == nil || field == "" {
		return 0
	}
	n := root
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return 0
		}
		n = n.Content[0]
	}
	line := n.Line
	for _, step := range steps(field) {
		switch s := step.(type) {
		case string:
			v, k := lookup(n, s)
			if v == nil {
				return line
			}
			n, line = v, k.Line
		case int:
			if n.Kind != yaml.SequenceNode || s >= len(n.Content) {
				return line
			}
			n = n.Content[s]
			line = n.Line
		}
	}
	return line
}

func lookup(n *yaml.Node, k string) (val, key *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			return n.Content[i+1], n.Content[i]
		}
	}
	return nil, nil
}

// steps splits "policies[1].dst" into ["policies", 1, "dst"].
func steps(f string) []any {
	var out []any
	for _, part := range strings.Split(f, ".") {
		name, idx, ok := strings.Cut(part, "[")
		if name != "" {
			out = append(out, name)
		}
		for ok {
			var rest string
			idx, rest, _ = strings.Cut(idx, "]")
			if n, err := strconv.Atoi(idx); err == nil {
				out = append(out, n)
			}
			_, idx, ok = strings.Cut(rest, "[")
		}
	}
	return out
}

// fieldAt names the field on a line of n as a path below path
// ("policies[0].dst_port"): the key whose name or scalar value is value
// if there are several on the line.
func fieldAt(n *yaml.Node, path string, line int, value string) string {
	first := ""
	var walk func(n *yaml.Node, prefix string) string
	walk = func(n *yaml.Node, prefix string) string {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if f := walk(c, prefix); f != "" {
					return f
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := join(prefix, k.Value)
				if k.Line == line {
					if value == "" || k.Value == value || v.Kind == yaml.ScalarNode && v.Value == value {
						return p
					}
					if first == "" {
						first = p
					}
				}
				if f := walk(v, p); f != "" {
					return f
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", prefix, i)
				if c.Kind == yaml.ScalarNode && c.Line == line {
					if value == "" || c.Value == value {
						return p
					}
					if first == "" {
						first = p
					}
				}
				if f := walk(c, p); f != "" {
					return f
				}
			}
		}
		return ""
	}
	if f := walk(n, path); f != "" {
		return f
	}
	if first != "" {
		return first
	}
	return path
}

// sortByLine orders problems by line, keeping the order of those on one
// line (and of those without one, which go first).
func sortByLine(p []Problem) {
	sort.SliceStable(p, func(i, j int) bool { return p[i].Line < p[j].Line })
}

// Err joins problems into one error, a line each: "file:line: field: msg".
func Err(file string, probs []Problem) error {
	errs := make([]error, len(probs))
	for i, p := range probs {
		loc := file
		if p.Line > 0 {
			loc += ":" + strconv.Itoa(p.Line)
		}
		errs[i] = fmt.Errorf("%s: %s: %s", loc, p.Field, p.Msg)
	}
	return errors.Join(errs...)
}
