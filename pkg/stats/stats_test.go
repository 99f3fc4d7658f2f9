// SPDX-License-Identifier: Apache-2.0

package stats

import (
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
)

// A subflow carries the record it was decoded from, whole: readers of a
// field no Subflow field decodes (pkg/metrics' table) read it there.
func TestDecodeKeepsRecord(t *testing.T) {
	r := abi.Subflow{Id: 7, Token: 0xabc, Cwnd: 10, LisaDebt: 3, UpdatedNs: 42, Flags: abi.SubflowMPTCP}
	s := decode(&r, "mptcp_olia", "olia", "alpha")
	if s.Record == nil || *s.Record != r || s.Cwnd != 10 || !s.MPTCP {
		t.Fatalf("decoded %+v from %+v", s, r)
	}
}
