// SPDX-License-Identifier: Apache-2.0

package matrix

import (
	"strings"
	"testing"
)

// The table replaces only what lies between the markers, and a document
// without them is refused rather than written somewhere else.
func TestSpliceAndMarkdown(t *testing.T) {
	r := Result{Kernel: "debian-6.1", Release: "6.1.0-57-amd64", Arch: "amd64", Date: "2026-11-28", Mode: "full",
		Features: []Feature{{Name: "struct_ops_link", OK: false}, {Name: "bpf_rdonly_cast", OK: true}}}
	r.Add("load/list/unload lia", Refused, "mptcp-cc load: x: it lacks BPF struct_ops links. Remedy: Debian 12: ...")
	table := Markdown([]Result{r})
	for _, want := range []string{"| Debian 12's own (bookworm) | 6.1.0-57-amd64 | amd64 | 2026-11-28 | no | yes | ? |", "load/list/unload lia: refused (clean) (full)"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	if d := Details([]Result{r}); !strings.Contains(d, "refused: it lacks BPF struct_ops links\n") {
		t.Errorf("a refusal's detail is not cut to what it lacks:\n%s", d)
	}
	doc := "before\n" + BeginMarker + "\nold\n" + EndMarker + "\nafter\n"
	got, err := Splice(doc, "new")
	if err != nil || got != "before\n"+BeginMarker+"\nnew\n"+EndMarker+"\nafter\n" {
		t.Errorf("Splice: %q, %v", got, err)
	}
	if _, err := Splice("no markers", "new"); err == nil {
		t.Error("Splice accepted a document without the markers")
	}
}
