// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"errors"
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/mptcp-cc/mptcp-cc/internal/strictyaml"
)

// errList collects the problems of a file, each naming the file, the line
// and the field.
type errList struct {
	file    string
	context string
	errs    []error
}

func (e *errList) add(n *yaml.Node, path, format string, args ...any) {
	loc := e.file
	if n != nil && n.Line > 0 {
		loc += ":" + strconv.Itoa(n.Line)
	}
	msg := fmt.Sprintf(format, args...)
	if e.context != "" {
		msg += " (in " + e.context + ")"
	}
	e.errs = append(e.errs, fmt.Errorf("%s: %s: %s", loc, path, msg))
}

func (e *errList) err() error {
	if len(e.errs) > 8 {
		e.errs = append(e.errs[:8], fmt.Errorf("... and %d more", len(e.errs)-8))
	}
	return errors.Join(e.errs...)
}

// problems adds what the strict decoder found.
func (e *errList) problems(ps []strictyaml.Problem) {
	for _, p := range ps {
		e.add(&yaml.Node{Line: p.Line}, p.Field, "%s", p.Msg)
	}
}

// decode decodes n (at path p) strictly into v; false when it did not fit
// (unknown keys alone are reported but leave what was decoded usable).
func (e *errList) decode(n *yaml.Node, p string, v any) bool {
	probs, ok := strictyaml.Decode(n, p, v)
	e.problems(probs)
	return ok
}
