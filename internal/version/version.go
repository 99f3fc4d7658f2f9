// SPDX-License-Identifier: Apache-2.0

// Package version holds what the build stamps into the binaries: the
// Makefile sets both with -ldflags -X.
package version

var (
	// Version is the release or `git describe` of the build.
	Version = "dev"
	// Commit is the git commit the build came from.
	Commit = "unknown"
)
