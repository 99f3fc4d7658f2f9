package stats

import (
	"net/netip"

	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// JoinKernel sets the backup flags of the MPTCP subflows in subs from the
// kernel's view (sock_diag sockets, of one or more namespaces), matching
// by token and addresses; it returns how many subflows it matched. A
// subflow it finds no socket for keeps the map's flag, as it was when the
// subflow started. Tokens are per namespace: a subflow whose token and
// addresses match sockets of two namespaces takes the first.
func JoinKernel(subs []Subflow, socks []sockdiag.Socket) int {
	type key struct {
		token         uint32
		local, remote netip.AddrPort
	}
	unmap := func(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }
	byKey := make(map[key]*sockdiag.Socket, len(socks))
	for i := range socks {
		s := &socks[i]
		k := key{s.Token, unmap(s.Local), unmap(s.Remote)}
		if s.MPTCP && byKey[k] == nil {
			byKey[k] = s
		}
	}
	n := 0
	for i := range subs {
		s := &subs[i]
		if !s.MPTCP {
			continue
		}
		if k := byKey[key{s.Token, unmap(s.Local), unmap(s.Remote)}]; k != nil {
			s.Backup, s.BackupRemote = k.BackupLocal, k.BackupRemote
			n++
		}
	}
	return n
}
