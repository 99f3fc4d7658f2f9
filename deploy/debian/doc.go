// SPDX-License-Identifier: Apache-2.0

// Package debian holds the Debian package's sources (build.sh, control,
// the maintainer scripts, the default configuration) and their tests: the
// package is built with `make deb`, installed, used and purged for real.
// It has no Go code; docs/package.md describes the package.
package debian
