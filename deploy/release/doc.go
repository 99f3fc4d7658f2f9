// SPDX-License-Identifier: Apache-2.0

// Package release tests `make release` (scripts/release.sh): both
// architectures' archives and Debian packages, their sums, what they hold,
// and that two builds of one commit are byte-identical. It has no Go code;
// docs/releasing.md describes a release.
package release
