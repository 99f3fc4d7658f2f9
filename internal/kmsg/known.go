// SPDX-License-Identifier: Apache-2.0

package kmsg

import (
	"fmt"
	"regexp"
	"strings"
)

// Known is a kernel fault that docs/kernel-faults.md has traced to one
// kernel build, not to this project: a run that logs it is not failed
// for it, but the fault is reported with its section and counted. A
// fault is known only when every part of its signature matches: the
// kernel release that logged it, and the incident's first line (the
// function and file:line of the WARN or BUG). The same WARN from another
// kernel build, or another WARN from this build, is unknown and fails
// the run.
type Known struct {
	Name    string         // short, for the report
	Doc     string         // where it is traced: docs/kernel-faults.md's section
	Release *regexp.Regexp // the kernel builds it is traced to (uname -r)
	Head    *regexp.Regexp // the incident's first fault line
}

// KnownFaults is the table of root-caused host-kernel faults. Add an
// entry only for a fault whose cause docs/kernel-faults.md shows, with a
// signature as narrow as the evidence.
var KnownFaults = []Known{{
	// WARN_ON_ONCE((int)val <= 0) in tcp_snd_cwnd_set, reached through
	// PRR from an ssthresh of 0x81104110: the stale stack word a BPF
	// congestion control's struct_ops trampoline returns on this
	// Firecracker/PVM guest build with SRSO "Safe RET". Once per boot.
	// Seen on 6.18.44-fc-v669 and -v782; Debian's 6.18.15 and the test
	// kernel's 7.3.4 showed none in 105,472 reductions.
	Name:    "tcp_cwnd_reduction WARN from a stale struct_ops return slot (PVM guest build)",
	Doc:     "docs/kernel-faults.md section 2",
	Release: regexp.MustCompile(`^6\.18\.44-fc-v[0-9]+$`),
	Head:    regexp.MustCompile(`^WARNING: CPU: [0-9]+ PID: [0-9]+ at \.?/?include/net/tcp\.h:1434 tcp_cwnd_reduction\+0x[0-9a-f]+/0x[0-9a-f]+`),
}}

// Incident is one kernel fault report: its first fault line and the
// records that belong to it (a WARN's register dump and call trace, up to
// its "---[ end trace" line).
type Incident struct {
	Records []Record
	Known   *Known // nil when no entry of KnownFaults matches
}

// Head is the incident's first fault line.
func (in Incident) Head() Record { return in.Records[0] }

func (in Incident) String() string {
	if in.Known != nil {
		return fmt.Sprintf("%s (known: %s, %s)", in.Head(), in.Known.Name, in.Known.Doc)
	}
	return in.Head().String()
}

// incidentStart matches the first line of a multi-line fault report; its
// end is the kernel's "---[ end trace" line. A record that is a fault
// outside such a report (a BPF error, a stray "Call Trace:" of a hung
// task) is an incident of its own.
var (
	incidentStart = regexp.MustCompile(`^WARNING: |^BUG[: ]|^kernel BUG at|^Oops|^general protection fault|^UBSAN:|^KASAN:|^KFENCE:`)
	incidentEnd   = regexp.MustCompile(`^---\[ end trace`)
)

// maxIncident bounds an incident whose end line was lost (a wrapped ring
// buffer, a panic): past it, a fault line starts a new incident.
const maxIncident = 200

// Incidents groups the faults among recs (records in sequence order)
// into incidents and matches each against KnownFaults for the kernel
// release that logged them.
func Incidents(recs []Record, release string) []Incident {
	var out []Incident
	open := -1 // index in out of the incident still collecting records
	for _, r := range recs {
		text := strings.TrimSpace(r.Text)
		if open >= 0 {
			in := &out[open]
			if !incidentStart.MatchString(text) && len(in.Records) < maxIncident {
				in.Records = append(in.Records, r)
				if incidentEnd.MatchString(text) {
					open = -1
				}
				continue
			}
			open = -1
		}
		if !faultRE.MatchString(r.Text) {
			continue
		}
		out = append(out, Incident{Records: []Record{r}})
		if incidentStart.MatchString(text) {
			open = len(out) - 1
		}
	}
	for i := range out {
		out[i].Known = match(out[i].Head(), release)
	}
	return out
}

func match(head Record, release string) *Known {
	text := strings.TrimSpace(head.Text)
	for i := range KnownFaults {
		k := &KnownFaults[i]
		if k.Release.MatchString(release) && k.Head.MatchString(text) {
			return k
		}
	}
	return nil
}

// Verdict is what a guarded run's kernel log says: the incidents no entry
// of KnownFaults explains (they fail the run) and the known ones
// (reported and counted).
type Verdict struct {
	Unknown []Incident
	Known   []Incident
}

// Judge splits the incidents of a run's records.
func Judge(recs []Record, release string) Verdict {
	var v Verdict
	for _, in := range Incidents(recs, release) {
		if in.Known != nil {
			v.Known = append(v.Known, in)
		} else {
			v.Unknown = append(v.Unknown, in)
		}
	}
	return v
}

// Counts is how many incidents of each known fault the run logged, by
// name, in KnownFaults' order.
func (v Verdict) Counts() []string {
	var out []string
	for _, k := range KnownFaults {
		n := 0
		for _, in := range v.Known {
			if in.Known.Name == k.Name {
				n++
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%d x %s (%s)", n, k.Name, k.Doc))
		}
	}
	return out
}
