// SPDX-License-Identifier: Apache-2.0

package integrity

// The +busy arm's neighbour: bulk transfers on a network of their own,
// so the arm's connections run while the machine is loaded.

import (
	"net/netip"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
)

// busy starts bulk MPTCP transfers, one after another, on a network of
// their own (two unshaped paths, a join each), until stop.
func busy(prefix string) (stop func(), err error) {
	n, err := topo.Build(topo.Config{Prefix: prefix, Paths: []int{0, 1}, Bottlenecks: []topo.Shaping{{}, {}}, Subflows: true})
	if err != nil {
		return nil, err
	}
	srv, err := xfer.ListenWith(n.Server, netip.AddrPortFrom(topo.ServerAddr, 0), true, xfer.ServerOptions{NoVerify: true})
	if err != nil {
		n.Close()
		return nil, err
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
			}
			// Short enough that stop waits little for the last one.
			_, _ = xfer.Run(xfer.Options{NS: n.Client, Remote: srv.Addr(), MPTCP: true, For: 500 * time.Millisecond})
		}
	}()
	return func() {
		close(quit)
		<-done
		srv.Close()
		n.Close()
	}, nil
}
