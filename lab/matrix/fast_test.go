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

func TestMatrixFast(t *testing.T) {
	testenv.RequireRoot(t)
	vmtest.Kernel(t)
	bin := testenv.Binary(t, "../../cmd/mptcp-cc")
	k, err := Lookup("debian-6.12")
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
	if !strings.HasPrefix(r.Release, "6.12.") || len(r.Steps) < 4 || !r.Passed() {
		t.Fatalf("6.12's fast check: %+v", r)
	}
}
