// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
)

// Every command fed invalid values: exit 2 for a wrong command line, 1 for
// a value refused, a message naming the problem, nothing left behind. A
// run id is part of the paths `clean` removes: "..", or a '/', must be
// refused before anything is touched.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	badFile := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badFile, []byte("name: x\nlinks: {a: {rate: fast}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	smoke := "../../testdata/scenarios/smoke.yaml"
	bad := testkernel.Bad
	testkernel.CheckBadArgs(t, binary, testkernel.PinRoot(t), nil, []testkernel.BadArgs{
		bad(2, []string{"runn"}, `unknown command "runn"`),
		bad(2, []string{"run"}, "no scenario file"),
		bad(2, []string{"run", smoke, "--reps", "many"}, `invalid value "many" for flag --reps: want a whole number`),
		bad(1, []string{"run", smoke, "--reps", "-1"}, "--reps -1", "1 or more"),
		bad(1, []string{"run", "/nonexistent/s.yaml"}, "/nonexistent/s.yaml", "no such file"),
		bad(1, []string{"run", badFile}, "bad.yaml:2: links.a.rate"),
		bad(2, []string{"up"}, "want one scenario file"),
		bad(2, []string{"up", smoke, "--cases", "x"}, "flag provided but not defined: --cases"),
		bad(1, []string{"up", "/nonexistent/s.yaml"}, "/nonexistent/s.yaml", "no such file"),
		bad(1, []string{"up", smoke, "--case", "nope"}, `no case "nope"`, "cases: base"),
		bad(2, []string{"validate"}, "no scenario file"),
		bad(1, []string{"validate", "/nonexistent/s.yaml"}, "/nonexistent/s.yaml", "no such file"),
		bad(1, []string{"validate", badFile}, "bad.yaml:2: links.a.rate"),
		bad(2, []string{"clean", "extra"}, `unexpected argument "extra"`),
		bad(2, []string{"clean", "--list", "--json=maybe"}, `invalid boolean value "maybe"`),
		bad(1, []string{"clean", "--run", ".."}, `run id ".."`, "mptcp-lab clean --list"),
		bad(1, []string{"clean", "--run", "../../x"}, `run id "../../x"`),
		bad(1, []string{"clean", "--run", "ZZ"}, `run id "ZZ"`),
		bad(2, []string{"summarize"}, "no results directory"),
		bad(1, []string{"summarize", "/nonexistent/results"}, "/nonexistent/results", "no such file"),
		bad(2, []string{"report"}, "no report spec"),
		bad(1, []string{"report", "/nonexistent/spec.yaml"}, "/nonexistent/spec.yaml", "no such file"),
		bad(2, []string{"report", "/nonexistent/spec.yaml", "--results"}, "flag needs an argument: --results"),
		bad(1, []string{"integrity", "--conns", "0"}, "--conns 0", "1 or more"),
		bad(1, []string{"integrity", "--parallel", "0"}, "--parallel 0", "1 to 256"),
		bad(1, []string{"integrity", "--size", "1"}, `--size "1"`, "1KiB to 1GiB"),
		bad(1, []string{"integrity", "--size", "big"}, `--size "big"`),
		bad(2, []string{"integrity", "cubic+pace"}, `arm "cubic+pace": unknown option "pace"`, "csum, nojoin, offload, pacing"),
		bad(2, []string{"integrity", "cubic+pacing"}, `arm "cubic+pacing"`, "our congestion controls"),
		bad(1, []string{"integrity", "--conns", "1", "nope_cc"}, `"nope_cc" is not registered`, "mptcp-cc load"),
		bad(1, []string{"ssthresh", "--for", "0s"}, "--for 0s", "1s to 24h"),
		bad(2, []string{"ssthresh", "--for", "soon"}, `invalid value "soon" for flag --for`),
		bad(1, []string{"ssthresh", "--limit", "0"}, "--limit 0", "1 to 2147483648"),
		bad(2, []string{"ssthresh", "cubic+udp"}, `arm "cubic+udp": unknown option "udp"`, "CC+tcp"),
		bad(1, []string{"ssthresh", "--for", "1s", "nope_cc"}, `"nope_cc" is not registered`, "mptcp-cc load"),
	})
}
