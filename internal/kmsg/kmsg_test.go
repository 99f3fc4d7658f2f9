// SPDX-License-Identifier: Apache-2.0

package kmsg

import (
	"os"
	"testing"
)

func TestParseAndFaults(t *testing.T) {
	lines := map[string]bool{
		"4,1200,123456,-;WARNING: CPU: 1 PID: 77 at net/mptcp/protocol.c:1234 __mptcp_push_pending+0x1/0x2\n SUBSYSTEM=net": true,
		"1,1201,123457,-;BUG: kernel NULL pointer dereference, address: 0000000000000008":                                   true,
		"4,1202,123458,c;Call Trace:": true,
		"3,1203,123459,-;bpf_struct_ops: failed to register tcp_congestion_ops mptcp_x":                              true,
		"6,1204,123460,-;EXT4-fs (vda): mounted filesystem":                                                          false,
		"4,1205,123461,-;TCP: request_sock_TCP: Possible SYN flooding on port 5201":                                  false,
		"6,1206,123462,-;PCI: Using host bridge windows from ACPI; if necessary, use \"pci=nocrs\" and report a bug": false,
	}
	for line, fault := range lines {
		r, ok := parse(line)
		if !ok {
			t.Fatalf("not parsed: %q", line)
		}
		if got := len(Faults([]Record{r})) == 1; got != fault {
			t.Errorf("%q: fault %v, want %v", r.Text, got, fault)
		}
	}
	if r, _ := parse("4,1200,123456,-;WARNING: x\n SUBSYSTEM=net"); r.Seq != 1200 || r.Priority != 4 || r.Text != "WARNING: x" {
		t.Errorf("parsed %+v", r)
	}
	if _, ok := parse("garbage"); ok {
		t.Error("garbage parsed")
	}
}

// The real log: a line written to /dev/kmsg is read back after Last.
func TestReadBack(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("needs root; CI runs as root")
		}
		t.Skip("needs root")
	}
	last, err := Last()
	if err != nil {
		t.Fatal(err)
	}
	const msg = "mptcp-cc kmsg test: a harmless line"
	if err := os.WriteFile("/dev/kmsg", []byte(msg+"\n"), 0); err != nil {
		t.Fatal(err)
	}
	recs, err := Read(last)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range recs {
		found = found || r.Text == msg
	}
	if !found || len(Faults(recs)) != 0 {
		t.Errorf("after seq %d: %v; want our line and no fault", last, recs)
	}
}
