// SPDX-License-Identifier: Apache-2.0

package matrix

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
)

// fastKernels are the matrix's rows that CI checks in the fast form (the
// preflight, LIA loaded by the CLI, a coupled two-path transfer intact,
// unload, nothing left): the kernel Debian 12 users are told to install,
// on amd64 and on arm64 (the routers' architecture), and Debian's newest
// 7.x. The host's own kernel and the shared test kernel are exercised by
// the rest of the suite, and Debian 12's 6.1 refusing by cmd/mptcp-cc's
// TestInVMDebian61Refuses; `make matrix` runs the full check on every row.
var fastKernels = []string{"debian-6.12", "debian-6.12-arm64", "debian-7.3"}

func TestMatrixFast(t *testing.T) {
	testenv.RequireRoot(t)
	vmtest.Kernel(t)
	bin := testenv.Binary(t, "../../cmd/mptcp-cc")
	for _, name := range fastKernels {
		t.Run(name, func(t *testing.T) {
			k, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			file := CacheFile(dir, k.Name)
			start := time.Now()
			runKernel(t, k, "fast", bin, "", file)
			t.Logf("the fast form took %v", time.Since(start).Round(time.Second))
			r, err := Read(file)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(r.Release, k.Debian) || len(r.Steps) < 4 || !r.Passed() {
				t.Fatalf("%s's fast check: %+v", name, r)
			}
		})
	}
}
