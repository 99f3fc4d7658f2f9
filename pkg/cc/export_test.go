// SPDX-License-Identifier: Apache-2.0

package cc

import "io/fs"

// LoadFrom is Load from objects other than this binary's: another build of
// the same sources (lab/probecc's, which read the sibling subflows with
// bpf_probe_read_kernel), for the bench and the differential test. Unload
// unloads what it loads.
func LoadFrom(objects fs.FS, a Algorithm, opts Options) error {
	f := *family
	f.Objects = objects
	return load(&f, a, opts)
}
