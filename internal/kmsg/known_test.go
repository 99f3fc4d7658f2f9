// SPDX-License-Identifier: Apache-2.0

package kmsg

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// readLog reads a recorded kernel log in /dev/kmsg's record format,
// skipping the file's '#' comment lines.
func readLog(t *testing.T, name string) []Record {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, ok := parse(line)
		if !ok {
			t.Fatalf("%s: not a kmsg record: %q", name, line)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

const hostBuild = "6.18.44-fc-v669"

// The known WARN on the build it is traced to: counted, not failing, and
// its whole dump is one incident (the call trace is not a second fault).
func TestKnownFaultOnItsBuild(t *testing.T) {
	recs := readLog(t, "known-warn.kmsg")
	v := Judge(recs, hostBuild)
	if len(v.Unknown) != 0 || len(v.Known) != 1 {
		t.Fatalf("unknown %v, known %v; want 0 unknown, 1 known", v.Unknown, v.Known)
	}
	in := v.Known[0]
	if in.Head().Seq != 342 || len(in.Records) != 56 {
		t.Errorf("incident starts at seq %d with %d records; want 342 with 56 (up to the end-trace line)", in.Head().Seq, len(in.Records))
	}
	if in.Known.Doc != "docs/kernel-faults.md section 2" {
		t.Errorf("known as %q", in.Known.Doc)
	}
	if c := v.Counts(); len(c) != 1 || !strings.HasPrefix(c[0], "1 x tcp_cwnd_reduction") {
		t.Errorf("counts %q", c)
	}
	// Another build of the same release (the -fc-v782 boot) is the same fault.
	if v := Judge(recs, "6.18.44-fc-v782"); len(v.Unknown) != 0 || len(v.Known) != 1 {
		t.Errorf("on -fc-v782: unknown %d, known %d", len(v.Unknown), len(v.Known))
	}
}

// The same WARN from a kernel it is not traced to fails the run: Debian's
// own 6.18, another release of the PVM build, or an unknown release.
func TestKnownFaultOnAnotherBuildFails(t *testing.T) {
	recs := readLog(t, "known-warn.kmsg")
	for _, release := range []string{"6.18.15+deb13-amd64", "6.18.45-fc-v669", "7.3.4-mptcp-bpf-sched", ""} {
		v := Judge(recs, release)
		if len(v.Unknown) != 1 || len(v.Known) != 0 {
			t.Errorf("release %q: unknown %d, known %d; want it unknown", release, len(v.Unknown), len(v.Known))
		}
	}
}

// A known fault does not hide an unknown one logged in the same run,
// before or after it, nor a one-line fault outside any dump.
func TestUnknownFaultsBesideAKnownOne(t *testing.T) {
	v := Judge(readLog(t, "unknown-warn.kmsg"), hostBuild)
	if len(v.Known) != 1 || v.Known[0].Head().Seq != 61021 {
		t.Errorf("known %v; want the tcp_cwnd_reduction WARN at seq 61021", v.Known)
	}
	var heads []uint64
	for _, in := range v.Unknown {
		heads = append(heads, in.Head().Seq)
	}
	if len(heads) != 2 || heads[0] != 61001 || heads[1] != 61040 {
		t.Errorf("unknown incidents start at %v; want [61001 61040]", heads)
	}
	if n := len(v.Unknown[0].Records); n != 10 {
		t.Errorf("the MPTCP WARN has %d records; want 10", n)
	}
}

// A dump whose end line was lost ends where the next fault report starts.
func TestIncidentWithoutEndLine(t *testing.T) {
	recs := []Record{
		{Seq: 1, Text: "WARNING: CPU: 0 PID: 1 at net/core/dev.c:1 f+0x1/0x2"},
		{Seq: 2, Text: "Call Trace:"},
		{Seq: 3, Text: "BUG: kernel NULL pointer dereference, address: 0000000000000008"},
		{Seq: 4, Text: "Call Trace:"},
	}
	in := Incidents(recs, hostBuild)
	if len(in) != 2 || len(in[0].Records) != 2 || len(in[1].Records) != 2 {
		t.Errorf("incidents %v; want two of two records each", in)
	}
}
