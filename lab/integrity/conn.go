// SPDX-License-Identifier: Apache-2.0

package integrity

// One connection, both ends: the client sends a header (seed, length) and
// the seeded payload, the server reads it to its end and checks every byte,
// and the verdict goes back to the client waiting for it. runArm
// (integrity.go) runs many of these; what they found is counted there.

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
)

// result is what the server saw of one connection.
type result struct {
	seed    uint64
	finding *Finding
	err     error
}

// verdicts routes what the server found to the client waiting for it.
type verdicts struct {
	mu sync.Mutex
	m  map[uint64]chan result
}

func (v *verdicts) expect(seed uint64) chan result {
	ch := make(chan result, 1)
	v.mu.Lock()
	v.m[seed] = ch
	v.mu.Unlock()
	return ch
}

func (v *verdicts) forget(seed uint64) {
	v.mu.Lock()
	delete(v.m, seed)
	v.mu.Unlock()
}

// deliver hands r to its client; a verdict nobody waits for (a header that
// did not arrive, a client that gave up) is dropped: the client counts it.
func (v *verdicts) deliver(r result) {
	v.mu.Lock()
	ch := v.m[r.seed]
	v.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// connTimeout bounds one connection: 256 KiB over an unshaped veth takes
// milliseconds, so a connection still open after this has broken.
const connTimeout = 20 * time.Second

// send is the client side of one connection: the seed and length, the
// payload, then it half-closes and waits for the server's one-byte
// verdict; or, closeEarly, it closes at once.
func send(ns string, remote netip.AddrPort, cc string, seed uint64, payload []byte, closeEarly bool) (local netip.AddrPort, dialed bool, err error) {
	c, err := xfer.Dial(ns, topo.ClientAddr(0), remote, true, func(fd int) error {
		return unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
	})
	if err != nil {
		return netip.AddrPort{}, false, err
	}
	defer c.Close()
	local = c.LocalAddr().(*net.TCPAddr).AddrPort()
	return local, true, sendOn(c, seed, payload, closeEarly)
}

func sendOn(c *net.TCPConn, seed uint64, payload []byte, closeEarly bool) error {
	_ = c.SetDeadline(time.Now().Add(connTimeout))
	var hdr [16]byte
	binary.BigEndian.PutUint64(hdr[:8], seed)
	size := uint64(len(payload))
	if closeEarly {
		size |= noVerdict
	}
	binary.BigEndian.PutUint64(hdr[8:], size)
	if _, err := c.Write(hdr[:]); err != nil {
		return fmt.Errorf("sending: %w", err)
	}
	if _, err := c.Write(payload); err != nil {
		return fmt.Errorf("sending: %w", err)
	}
	if closeEarly {
		return nil // the deferred Close, with the payload still in flight
	}
	if err := c.CloseWrite(); err != nil {
		return err
	}
	var verdict [1]byte
	if _, err := io.ReadFull(c, verdict[:]); err != nil {
		return fmt.Errorf("waiting for the server: %w", err)
	}
	return nil
}

// lateRead is how long a +late server waits between the header and the
// payload: the join comes up, and sends its first data, about 1 ms into a
// connection here.
const lateRead = 5 * time.Millisecond

// noVerdict, in the header's length, says the client closes as soon as it
// has written, and waits for no verdict.
const noVerdict = 1 << 63

// serve is the server: each connection read to its end and checked
// against the pattern its header names.
func serve(ln net.Listener, size int, wait time.Duration, deliver func(result)) {
	bufs := sync.Pool{New: func() any { return make([]byte, size+1) }}
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			buf := bufs.Get().([]byte)
			r := receive(c, buf, wait)
			c.Close()
			bufs.Put(buf)
			deliver(r)
		}()
	}
}

func receive(c net.Conn, buf []byte, wait time.Duration) result {
	_ = c.SetDeadline(time.Now().Add(connTimeout))
	var hdr [16]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return result{err: fmt.Errorf("server: reading the header: %w", err)}
	}
	r := result{seed: binary.BigEndian.Uint64(hdr[:8])}
	size := binary.BigEndian.Uint64(hdr[8:])
	answer := size&noVerdict == 0
	size &^= noVerdict
	time.Sleep(wait)
	if size+1 != uint64(len(buf)) {
		r.err = fmt.Errorf("server: the client announced %d bytes, want %d", size, len(buf)-1)
		return r
	}
	n, err := io.ReadFull(c, buf)
	if err != io.ErrUnexpectedEOF && err != nil {
		r.err = fmt.Errorf("server: after %d bytes: %w", n, err)
		return r
	}
	if n != int(size) {
		r.err = fmt.Errorf("server: %d bytes arrived, %d were sent", n, size)
		return r
	}
	r.finding = Check(0, buf[:n], Pattern(r.seed, n))
	if !answer {
		return r
	}
	if _, err := c.Write([]byte{0}); err != nil {
		r.err = fmt.Errorf("server: answering: %w", err)
	}
	return r
}
