// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"path"
	"strings"
)

// The licenses LICENSE assigns: the BPF programs and headers are dual so
// the kernel accepts them as GPL-compatible and others may reuse them under
// BSD terms; everything else is Apache-2.0.
const (
	bpfLicense   = "GPL-2.0-only OR BSD-2-Clause"
	otherLicense = "Apache-2.0"
)

const tag = "SPDX-License-Identifier:"

// bpfLicenseString is what each BPF object's license section says: a
// string the kernel's license_is_gpl_compatible accepts (struct_ops
// programs and kfunc calls need one) that names both of bpfLicense's
// options.
const bpfLicenseString = "Dual BSD/GPL"

// license returns the SPDX expression a tracked file must carry.
func license(rel string) string {
	if strings.HasPrefix(rel, "bpf/") {
		return bpfLicense
	}
	return otherLicense
}

// style is how a kind of source file writes its SPDX line.
type style struct {
	open, close string // the comment around "SPDX-License-Identifier: ..."
	// blankAfter: a Go file needs a blank line after its SPDX line, or the
	// line would become part of the package's doc comment.
	blankAfter bool
	// skip reports whether a leading line must stay above the SPDX line
	// (a shebang, a Dockerfile parser directive).
	skip func(line string) bool
}

func (s style) line(lic string) string { return s.open + tag + " " + lic + s.close }

var (
	goStyle     = style{open: "// ", blankAfter: true, skip: never}
	cStyle      = style{open: "// ", skip: never}
	headerStyle = style{open: "/* ", close: " */", skip: never} // kernel style for .h
	hashStyle   = style{open: "# ", skip: isShebang}
	dockerStyle = style{open: "# ", skip: isDockerDirective}
)

func never(string) bool { return false }

func isShebang(l string) bool { return strings.HasPrefix(l, "#!") }

// isDockerDirective: a parser directive (# syntax=..., # escape=...) only
// counts above every other comment, so the SPDX line goes below it.
func isDockerDirective(l string) bool {
	k, _, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(l, "#")), "=")
	k = strings.ToLower(strings.TrimSpace(k))
	return strings.HasPrefix(l, "#") && ok && (k == "syntax" || k == "escape" || k == "check")
}

// exemptDirs hold files that are not source: fuzz corpora (inputs a
// fuzzer reads byte for byte), measured results and the records kept with
// them, and the license texts themselves.
var exemptDirs = []string{"LICENSES/", "docs/results/"}

// exemptNames are metadata whose format leaves no room for a comment, or
// that a tool writes: dpkg's control and conffiles, the copyright file
// (the license statement itself), go.mod/go.sum, the ignore lists.
var exemptNames = map[string]bool{
	"LICENSE": true, "go.mod": true, "go.sum": true, ".gitignore": true, ".dockerignore": true,
	"deploy/debian/control": true, "deploy/debian/conffiles": true, "deploy/debian/copyright": true,
}

// exemptExts are documentation and data: prose, tables, charts, recorded
// output, golden files, and patches (under the license of the files they
// change, as LICENSE says).
var exemptExts = map[string]bool{
	".md": true, ".json": true, ".csv": true, ".svg": true, ".txt": true,
	".golden": true, ".patch": true,
	".kmsg":     true, // recorded kernel logs (internal/kmsg/testdata), read record by record
	".expected": true, // recorded tool output compared line by line (checkpatch.expected)
}

// classify says how a tracked file carries its SPDX line: ok false means
// it carries none (data, docs, generated, binary). A file of a kind no
// rule covers is an error, so a new kind gets a decision, not a silent pass.
func classify(rel string, data []byte) (s style, ok bool, err error) {
	base := path.Base(rel)
	switch {
	case exemptNames[rel]:
		return style{}, false, nil
	case strings.Contains("/"+rel, "/testdata/fuzz/"):
		return style{}, false, nil
	case rel == "bpf/include/vmlinux.h", strings.HasSuffix(rel, "_bpfel.go"):
		return style{}, false, nil // generated (make generate), never committed
	case bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0:
		return style{}, false, nil // binary: nowhere to write a comment
	case exemptExts[path.Ext(rel)]:
		return style{}, false, nil
	}
	for _, d := range exemptDirs {
		if strings.HasPrefix(rel, d) {
			return style{}, false, nil
		}
	}
	switch path.Ext(rel) {
	case ".go":
		return goStyle, true, nil
	case ".c":
		return cStyle, true, nil
	case ".h":
		return headerStyle, true, nil
	case ".sh", ".py", ".yaml", ".yml", ".service":
		return hashStyle, true, nil
	}
	switch {
	case base == "Makefile":
		return hashStyle, true, nil
	case base == "Dockerfile", base == "Containerfile":
		return dockerStyle, true, nil
	case isShebang(string(data)):
		return hashStyle, true, nil // a script without an extension
	}
	return style{}, false, fmt.Errorf("no SPDX rule for this kind of file: add it to the source or the exempt rules in scripts/spdx/rules.go")
}
