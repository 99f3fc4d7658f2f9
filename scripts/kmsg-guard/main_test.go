// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/kmsg"
)

func TestReport(t *testing.T) {
	warn := func(seq uint64, at string) []kmsg.Record {
		return []kmsg.Record{
			{Seq: seq, Priority: 4, Text: "WARNING: CPU: 1 PID: 0 at " + at},
			{Seq: seq + 1, Priority: 4, Text: "Call Trace:"},
			{Seq: seq + 2, Priority: 4, Text: "---[ end trace 0000000000000000 ]---"},
		}
	}
	known := warn(10, "./include/net/tcp.h:1434 tcp_cwnd_reduction+0x1bb/0x1d0")
	unknown := warn(20, "net/mptcp/protocol.c:1234 __mptcp_push_pending+0x1c2/0x1e0")

	for _, c := range []struct {
		name   string
		recs   []kmsg.Record
		fail   bool
		output []string
	}{
		{"clean", nil, false, []string{"no kernel fault logged (0 records"}},
		{"known only", known, false, []string{
			"known host-kernel fault, not failing the run",
			"docs/kernel-faults.md section 2",
			"counted known host-kernel faults: 1 x tcp_cwnd_reduction",
			"no unknown kernel fault logged",
		}},
		{"unknown and known", append(append([]kmsg.Record{}, unknown...), known...), true, []string{
			"kernel fault logged during the run: [seq 20, level 4] WARNING: CPU: 1 PID: 0 at net/mptcp/protocol.c:1234",
			"counted known host-kernel faults: 1 x",
			"FAIL: 1 kernel fault(s)",
		}},
	} {
		var out strings.Builder
		failed := report(&out, kmsg.Judge(c.recs, "6.18.44-fc-v669"), len(c.recs))
		if failed != c.fail {
			t.Errorf("%s: failed %v, want %v\n%s", c.name, failed, c.fail, out.String())
		}
		for _, s := range c.output {
			if !strings.Contains(out.String(), s) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, s, out.String())
			}
		}
	}
}
