// SPDX-License-Identifier: Apache-2.0

package algo_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/algo"
	_ "github.com/mptcp-cc/mptcp-cc/pkg/model"      // the congestion controls register there
	_ "github.com/mptcp-cc/mptcp-cc/pkg/schedmodel" // and the schedulers there
)

// Every algorithm of the table has its section in the docs: a congestion
// control a heading in docs/algorithms.md that names it as the kernel
// lists it (## LIA (RFC 6356), `mptcp_lia`), a scheduler a heading in
// docs/schedulers.md that starts with its name (### blest).
func TestDocsHaveASectionEach(t *testing.T) {
	for _, d := range []struct {
		kind    algo.Kind
		file    string
		heading func(name string) string
	}{
		{algo.CC, "../../docs/algorithms.md", func(n string) string { return "(?m)^##+ .*`mptcp_" + n + "`" }},
		{algo.Scheduler, "../../docs/schedulers.md", func(n string) string { return `(?m)^##+ ` + n + `\b` }},
	} {
		doc, err := os.ReadFile(d.file)
		if err != nil {
			t.Fatal(err)
		}
		if len(algo.All(d.kind)) == 0 {
			t.Errorf("no %s registered", d.kind)
		}
		for _, a := range algo.All(d.kind) {
			if !regexp.MustCompile(d.heading(regexp.QuoteMeta(a.Name))).Match(doc) {
				t.Errorf("%s has no section for the %s %s (a heading matching %s)", d.file[len("../../"):], d.kind, a.Name, d.heading(a.Name))
			}
		}
	}
}
