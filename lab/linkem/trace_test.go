// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustTrace(t *testing.T, s string) *Trace {
	t.Helper()
	tr, err := ParseTrace(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestParseTrace(t *testing.T) {
	tr := mustTrace(t, "0\n3\n3\n\n 7 \n10") // blank lines, spaces, no final newline
	if tr.Len() != 5 || tr.Period() != 10*time.Millisecond {
		t.Fatalf("Len %d Period %v, want 5 and 10ms", tr.Len(), tr.Period())
	}
	for k, want := range map[int64]time.Duration{0: 0, 1: 3, 4: 10, 5: 10, 6: 13, 12: 23} {
		if got := tr.at(k); got != want*time.Millisecond {
			t.Errorf("opportunity %d at %v, want %vms", k, got, want)
		}
	}
	for d, want := range map[time.Duration]int64{0: 0, 1: 1, 3: 1, 4: 3, 10: 4, 11: 6, 20: 9} {
		if got := tr.firstAtOrAfter(d * time.Millisecond); got != want {
			t.Errorf("firstAtOrAfter(%dms) = %d, want %d", d, got, want)
		}
	}
}

func TestParseTraceErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "no timestamps",
		"\n\n":                   "no timestamps",
		"0\n0\n":                 "must be > 0",
		"1\n2\nx3\n":             `line 3: "x3" is not an integer`,
		"1\n2.5\n":               `line 2: "2.5" is not an integer`,
		"1\n-4\n":                "line 2: negative timestamp",
		"5\n\n4\n":               "line 3: timestamp 4 goes back before 5",
		"1 2\n":                  `line 1: "1 2" is not an integer`,
		"99999999999999999999\n": "line 1",
	} {
		_, err := ParseTrace(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTrace(%q) error %v, want it to contain %q", in, err, want)
		}
	}
}

func TestLoadTrace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.trace")
	if err := os.WriteFile(p, []byte("1\nfoo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadTrace(p)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("LoadTrace error %v, want file name and line", err)
	}
	if _, err := LoadTrace(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("missing file accepted")
	}
}
