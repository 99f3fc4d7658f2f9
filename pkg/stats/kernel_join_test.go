// SPDX-License-Identifier: Apache-2.0

package stats

import (
	"net/netip"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// The kernel's flags replace the map's for the subflows it reports; the
// others keep theirs; plain TCP is never flagged.
func TestJoinKernel(t *testing.T) {
	ap := netip.MustParseAddrPort
	subs := []Subflow{
		{MPTCP: true, Token: 1, Local: ap("10.0.0.1:1"), Remote: ap("10.1.0.1:80"), Backup: true}, // cleared since it started
		{MPTCP: true, Token: 1, Local: ap("10.0.1.1:2"), Remote: ap("10.1.0.1:80")},               // flagged both ways since
		{MPTCP: true, Token: 2, Local: ap("10.0.0.1:3"), Remote: ap("10.1.0.1:80"), Backup: true}, // not reported: kept
		{Local: ap("10.0.0.1:4"), Remote: ap("10.1.0.1:80")},
	}
	socks := []sockdiag.Socket{
		{MPTCP: true, Token: 1, Local: ap("10.0.0.1:1"), Remote: ap("10.1.0.1:80")},
		{MPTCP: true, Token: 1, Local: ap("[::ffff:10.0.1.1]:2"), Remote: ap("[::ffff:10.1.0.1]:80"), BackupLocal: true, BackupRemote: true},
		{MPTCP: true, Token: 3, Local: ap("10.0.0.1:3"), Remote: ap("10.1.0.1:80")},
		{Local: ap("10.0.0.1:4"), Remote: ap("10.1.0.1:80"), BackupLocal: true},
	}
	if n := JoinKernel(subs, socks); n != 2 {
		t.Errorf("matched %d, want 2", n)
	}
	want := [][2]bool{{false, false}, {true, true}, {true, false}, {false, false}}
	for i, s := range subs {
		if got := [2]bool{s.Backup, s.BackupRemote}; got != want[i] {
			t.Errorf("subflow %d: backup, backup_remote %v, want %v", i, got, want[i])
		}
	}
}
