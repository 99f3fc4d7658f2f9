// SPDX-License-Identifier: Apache-2.0

package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteJSON writes v as indented JSON, the form of every --json listing.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Table is an aligned text table: Row per line, then Flush.
type Table struct {
	tw *tabwriter.Writer
	// right: every cell, the last included, ends in a tab, which is what
	// tabwriter needs to right-align the last column.
	right bool
}

// NewTable starts a table with its header cells.
func NewTable(w io.Writer, header ...string) *Table {
	t := &Table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.Row(anySlice(header)...)
	return t
}

// NewRightTable is NewTable with cells aligned right (numeric tables).
func NewRightTable(w io.Writer, header ...string) *Table {
	t := &Table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight), right: true}
	t.Row(anySlice(header)...)
	return t
}

// Row adds one line; cells are formatted with fmt.Sprint.
func (t *Table) Row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	if t.right {
		fmt.Fprint(t.tw, "\t")
	}
	fmt.Fprintln(t.tw)
}

// Flush writes the table.
func (t *Table) Flush() error { return t.tw.Flush() }

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
