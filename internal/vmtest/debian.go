// SPDX-License-Identifier: Apache-2.0

package vmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// KernelCacheEnv names the directory Debian's kernels are fetched into
// (default ~/.cache/mptcp-cc/kernels, as the Makefile's KERNEL_CACHE).
const KernelCacheEnv = "KERNEL_CACHE"

// DebianKernel returns the image of Debian's kernel version (as in
// linux-image-VERSION-amd64: "6.1.0-57", "6.12.117+deb12"), fetched once by
// scripts/debian-kernel.sh into the kernel cache, for KernelImageEnv. It
// skips the test, saying why, when the package cannot be had (no network,
// or the archive has moved on: the script lists what it has).
func DebianKernel(t testing.TB, version string) string {
	t.Helper()
	cache, err := KernelCache()
	if err != nil {
		t.Skipf("no kernel cache (%v): set %s", err, KernelCacheEnv)
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "debian-kernel.sh")
	cmd := exec.Command(script, version, cache)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("Debian's kernel %s could not be fetched (scripts/debian-kernel.sh: %v): VM test skipped\n%s", version, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// KernelCache is the directory Debian's kernels are fetched into:
// KERNEL_CACHE, else ~/.cache/mptcp-cc/kernels.
func KernelCache() (string, error) {
	if c := os.Getenv(KernelCacheEnv); c != "" {
		return c, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cache", "mptcp-cc", "kernels"), nil
}
