// SPDX-License-Identifier: Apache-2.0

package stats

import (
	"net/netip"
	"os"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// MaxFlagNamespaces bounds the named namespaces whose subflows' backup
// flags KernelSockets reads (two sock_diag dumps each per read).
const MaxFlagNamespaces = 64

// KernelSockets lists the TCP sockets of the reader's network namespace
// and of the named ones (`ip netns list`; the first MaxFlagNamespaces by
// name), for JoinKernel: the BPF maps record a subflow's backup flag only
// as it starts, the kernel has it as it is now. A namespace that cannot be
// read is skipped; its subflows keep the map's flag.
func KernelSockets() []sockdiag.Socket {
	names := []string{""}
	if ents, err := os.ReadDir(netns.Dir); err == nil {
		var named []string
		for _, e := range ents {
			named = append(named, e.Name())
		}
		sort.Strings(named)
		names = append(names, named[:min(len(named), MaxFlagNamespaces)]...)
	}
	var out []sockdiag.Socket
	for _, ns := range names {
		c, err := sockdiag.DialNS(ns)
		if err != nil {
			continue
		}
		for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
			socks, err := c.TCP(fam, sockdiag.Connected)
			if err == nil {
				out = append(out, socks...)
			}
		}
		c.Close()
	}
	return out
}

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

// KernelView is KernelSockets kept for readers that must answer at once,
// such as a metrics scrape: with thousands of subflows a dump takes
// hundreds of milliseconds (400 ms for 10,000 sockets on our 2-core test
// host), most of it the kernel's. Sockets returns the list of the last
// dump at once, and starts a new dump in the background when that list is
// older than the view's period; nothing is dumped while nobody reads. The
// period grows to 20 times the last dump's duration, so the dumps never
// take more than about 5% of a CPU. So the flags a reader joins are at
// most a period (and a dump) old; before the first dump has finished,
// there are none, and subflows keep the map's flags.
type KernelView struct {
	every time.Duration
	dump  func() []sockdiag.Socket

	mu      sync.Mutex
	socks   []sockdiag.Socket
	at      time.Time // when the last dump finished; zero: none yet
	period  time.Duration
	dumping bool
}

// NewKernelView returns a view refreshed at most every period.
func NewKernelView(period time.Duration) *KernelView {
	return &KernelView{every: period, period: period, dump: KernelSockets}
}

// Sockets is the last dump's list, and when it finished (zero: no dump has
// finished yet).
func (v *KernelView) Sockets() ([]sockdiag.Socket, time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.dumping && time.Since(v.at) >= v.period {
		v.dumping = true
		go v.refresh()
	}
	return v.socks, v.at
}

func (v *KernelView) refresh() {
	start := time.Now()
	socks := v.dump()
	took := time.Since(start)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.socks, v.at, v.dumping = socks, time.Now(), false
	v.period = max(v.every, 20*took)
}
