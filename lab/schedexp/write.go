// SPDX-License-Identifier: Apache-2.0

package schedexp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Meta is what every result says of itself.
type Meta struct {
	// Smoke marks a run that checks the runner works end to end: too
	// small to be a measurement.
	Smoke  bool   `json:"smoke"`
	Kernel string `json:"kernel"` // the release the experiment ran on
}

// begin starts a result's markdown, with the smoke-run warning if it is one.
func (m Meta) begin() *strings.Builder {
	b := &strings.Builder{}
	if m.Smoke {
		b.WriteString("**Smoke run** (checks that the runner works end to end; not a measurement).\n\n")
	}
	return b
}

// Write saves an experiment's result as DIR/NAME.json (everything,
// machine-readable) and DIR/NAME.md (the table).
func Write(dir, name string, v any, markdown string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".md"), []byte(markdown), 0o644)
}
