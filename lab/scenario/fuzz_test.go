// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// located matches one line of a Parse error that a user can act on: it
// names the file and then a line ("x.yaml:12: ..." or the YAML decoder's
// "line 12"), or a field path ("x.yaml: flows.f.cc: ..."); a document
// that is not a mapping at all is told which top-level fields it needs.
var located = regexp.MustCompile(`^x\.yaml(:\d+: \S|: .*\bline \d+|: [A-Za-z_][\w.\[\]-]*: \S|: a scenario is a YAML mapping \(name:)`)

// Parse reads files written by hand and by sweeps: whatever it is given,
// it must not panic, and an error must tell the user where to look. The
// seeds are the repository's scenarios, the bad edits of TestParseErrors
// and the hostile YAML in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/scenarios/*.yaml")
	more, _ := filepath.Glob("../../testdata/scenarios/*/*.yaml")
	for _, name := range append(files, more...) {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(good))
	for _, c := range badEdits {
		f.Add(applyEdit(f, c.name, c.edit))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("x.yaml", data)
		if err == nil {
			if file == nil || len(file.Cases) == 0 {
				t.Fatalf("accepted without a case: %+v", file)
			}
			return
		}
		msg := err.Error()
		if strings.TrimSpace(msg) == "" {
			t.Fatalf("empty error for %q", data)
		}
		for _, line := range strings.Split(msg, "\n") {
			if strings.HasPrefix(line, "... and ") || located.MatchString(line) {
				continue
			}
			t.Fatalf("error line names neither a line nor a field: %q\nwhole error:\n%s", line, msg)
		}
	})
}
