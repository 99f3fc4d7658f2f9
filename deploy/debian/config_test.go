// SPDX-License-Identifier: Apache-2.0

package debian

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// uncommentExamples turns the configuration's commented examples into
// entries: under a key given as "key: []", the lines "#  ..." that follow.
func uncommentExamples(conf string) string {
	var out []string
	inExample := false
	for _, line := range strings.Split(conf, "\n") {
		if key, ok := strings.CutSuffix(line, ": []"); ok && !strings.HasPrefix(line, "#") {
			out = append(out, key+":")
			inExample = true
			continue
		}
		if !strings.HasPrefix(line, "#") {
			inExample = false
		}
		if rest, ok := strings.CutPrefix(line, "#  "); ok && inExample {
			line = rest
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// The configuration the package installs is valid and loads nothing, and
// its commented examples stay valid when uncommented: an administrator's
// first edit must not be a syntax hunt.
func TestDefaultConfig(t *testing.T) {
	bin := testenv.Binary(t, "../../cmd/mptcp-cc")
	check := func(path string) string {
		out, err := exec.Command(bin, "serve", "--config.check", "--config", path).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", path, err, out)
		}
		return string(out)
	}
	if out := check("config.yaml"); !strings.Contains(out, "0 algorithm(s), 0 policy rule(s)") {
		t.Errorf("the default configuration must load nothing; config.check says:\n%s", out)
	}
	conf, err := os.ReadFile("config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	examples := filepath.Join(t.TempDir(), "examples.yaml")
	if err := os.WriteFile(examples, []byte(uncommentExamples(string(conf))), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := check(examples); !strings.Contains(out, "2 algorithm(s), 2 policy rule(s)") {
		t.Errorf("the uncommented examples should give 2 algorithms and 2 policies; config.check says:\n%s", out)
	}
}
