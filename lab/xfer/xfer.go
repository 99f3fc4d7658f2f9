// SPDX-License-Identifier: Apache-2.0

// Package xfer is the project's own transfer tool: a sink server and a
// sending client over MPTCP (or TCP), with the congestion control chosen per
// socket, byte counts the receiver measures (what was delivered, not what sat
// in a send buffer), completion times, and an end-to-end integrity check.
//
// Protocol: the client sends a payload and half-closes; the server answers
// with the byte count it received and the offset of the first byte that
// differs from what was sent (or -1), and closes. The payload is a fixed
// pseudo-random block of a prime length, repeated, which the server knows:
// it checks every byte as it arrives, so a lost, doubled, misplaced or
// corrupted segment is caught and located, not merely detected.
package xfer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

const blockLen = 1<<20 + 7 // prime-ish, so repetitions do not align with buffers

var block = func() []byte {
	b := make([]byte, blockLen)
	r := rand.New(rand.NewPCG(0x6d70746370, 0x6363))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

// Server is a sink that counts what each connection delivered.
type Server struct {
	opts  ServerOptions
	ln    net.Listener
	mu    sync.Mutex
	conns map[netip.AddrPort]*Received
	live  map[net.Conn]struct{} // connections still being served
	wg    sync.WaitGroup
}

// closeGrace is how long Close lets unfinished connections run before it
// aborts them. A connection whose client has gone without a word (an MPTCP
// connection that stalled, then was reset over a path that lost the reset)
// would otherwise keep Close, and the test or program behind it, waiting
// forever on a read that never returns.
var closeGrace = 5 * time.Second

// Received is what one connection has delivered so far.
type Received struct {
	bytes atomic.Int64
	Start time.Time
	done  chan struct{}
	End   time.Time
	Err   error
	// FirstBad is the offset of the first byte that differed from what the
	// client sends, or -1.
	FirstBad int64
}

// Bytes delivered so far.
func (r *Received) Bytes() int64 { return r.bytes.Load() }

// ServerOptions tune a sink.
type ServerOptions struct {
	// NoVerify skips the byte-by-byte check (the receipt then reports no
	// mismatch): at tens of Gbit/s the check would share the CPU with the
	// network stack being measured.
	NoVerify bool
}

// Listen starts a sink on addr inside the named network namespace ("" for
// the current one). mptcp selects IPPROTO_MPTCP.
func Listen(ns string, addr netip.AddrPort, mptcp bool) (*Server, error) {
	return ListenWith(ns, addr, mptcp, ServerOptions{})
}

// ListenWith is Listen with options.
func ListenWith(ns string, addr netip.AddrPort, mptcp bool, o ServerOptions) (*Server, error) {
	s := &Server{opts: o, conns: map[netip.AddrPort]*Received{}, live: map[net.Conn]struct{}{}}
	ln, err := ListenIn(ns, addr, mptcp, nil)
	if err != nil {
		return nil, err
	}
	s.ln = ln
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the listening address.
func (s *Server) Addr() netip.AddrPort {
	return s.ln.Addr().(*net.TCPAddr).AddrPort()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		r := &Received{Start: time.Now(), done: make(chan struct{}), FirstBad: -1}
		remote := c.RemoteAddr().(*net.TCPAddr).AddrPort()
		remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
		s.mu.Lock()
		s.conns[remote] = r
		s.live[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c, r)
			s.mu.Lock()
			delete(s.live, c)
			s.mu.Unlock()
		}()
	}
}

func (s *Server) serve(c net.Conn, r *Received) {
	defer c.Close()
	defer close(r.done)
	buf := make([]byte, 256<<10)
	var off int64
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if !s.opts.NoVerify && r.FirstBad < 0 {
				if i := firstDiff(buf[:n], off); i >= 0 {
					r.FirstBad = off + int64(i)
				}
			}
			off += int64(n)
			r.bytes.Store(off)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			r.Err = err
			r.End = time.Now()
			return
		}
	}
	r.End = time.Now()
	var reply [16]byte
	binary.BigEndian.PutUint64(reply[:8], uint64(off))
	binary.BigEndian.PutUint64(reply[8:], uint64(r.FirstBad))
	if _, err := c.Write(reply[:]); err != nil {
		r.Err = err
	}
}

// firstDiff compares b with the payload stream at offset off and returns the
// index in b of the first byte that differs, or -1.
func firstDiff(b []byte, off int64) int {
	pos := int(off % blockLen)
	done := 0
	for done < len(b) {
		n := min(len(b)-done, blockLen-pos)
		if !bytes.Equal(b[done:done+n], block[pos:pos+n]) {
			for i := 0; i < n; i++ {
				if b[done+i] != block[pos+i] {
					return done + i
				}
			}
		}
		done += n
		pos = 0
	}
	return -1
}

// Conn returns the record of the connection whose client (initial subflow)
// is at remote, waiting up to a second for it to be accepted.
func (s *Server) Conn(remote netip.AddrPort) (*Received, error) {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		r := s.conns[remote]
		s.mu.Unlock()
		if r != nil {
			return r, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no connection from %s", remote)
		}
	}
}

// Close stops accepting and waits for the connections to finish; those
// still open after closeGrace are aborted (their Received.Err says so).
func (s *Server) Close() error {
	err := s.ln.Close()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return err
	case <-time.After(closeGrace):
	}
	s.mu.Lock()
	for c := range s.live {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	}
	s.mu.Unlock()
	<-done
	return err
}

// Options for one transfer.
type Options struct {
	NS     string         // client namespace ("" for the current one)
	Local  netip.Addr     // source address (zero: any)
	Remote netip.AddrPort // server
	MPTCP  bool
	CC     string        // congestion control for the socket ("" keeps the default)
	Bytes  int64         // send this much...
	For    time.Duration // ...or for this long (Bytes == 0)
}

// Result of one transfer.
type Result struct {
	Sent      int64         // bytes the client wrote
	Delivered int64         // bytes the server says it received
	Duration  time.Duration // from connect to the server's reply
	Intact    bool          // every byte arrived, in order, unchanged
	FirstBad  int64         // offset of the first wrong byte the server saw, or -1
	CC        string        // congestion control the socket actually ran
	Local     netip.AddrPort
}

// Client is a running transfer.
type Client struct {
	conn  *net.TCPConn
	local netip.AddrPort
	cc    string
	opts  Options
	start time.Time
	sent  atomic.Int64
	stop  atomic.Bool // Stop was called: end the sending phase now
	done  chan struct{}
	res   Result
	err   error
}

// Start connects and begins sending in the background.
func Start(o Options) (*Client, error) {
	tc, err := Dial(o.NS, o.Local, o.Remote, o.MPTCP, WithCC(o.CC))
	if err != nil {
		return nil, err
	}
	c := &Client{conn: tc, opts: o, start: time.Now(), done: make(chan struct{})}
	la := tc.LocalAddr().(*net.TCPAddr).AddrPort()
	c.local = netip.AddrPortFrom(la.Addr().Unmap(), la.Port())
	c.cc = congestionControl(tc)
	go c.run()
	return c, nil
}

// Local is the client's address of the (initial) subflow: the key the
// server files the connection under.
func (c *Client) Local() netip.AddrPort { return c.local }

// Sent is how many bytes the client has written so far.
func (c *Client) Sent() int64 { return c.sent.Load() }

// Stop ends the sending phase early (before Bytes or For), as if its
// deadline had come: the transfer then half-closes and collects the
// server's receipt as usual, so Wait still tells whether what was sent
// arrived intact. For tests that need transfers alive until they have
// looked at them, however long the looking takes.
func (c *Client) Stop() {
	c.stop.Store(true)
	_ = c.conn.SetWriteDeadline(time.Now())
}

// Wait blocks until the transfer ends.
func (c *Client) Wait() (Result, error) {
	<-c.done
	return c.res, c.err
}

func (c *Client) run() {
	defer close(c.done)
	defer c.conn.Close()
	deadline := time.Time{}
	if c.opts.Bytes == 0 {
		deadline = c.start.Add(c.opts.For)
		_ = c.conn.SetWriteDeadline(deadline)
	}
	var off int
	for !c.stop.Load() {
		chunk := block[off:]
		if len(chunk) > 128<<10 {
			chunk = chunk[:128<<10]
		}
		if c.opts.Bytes > 0 {
			if left := c.opts.Bytes - c.sent.Load(); left <= 0 {
				break
			} else if int64(len(chunk)) > left {
				chunk = chunk[:left]
			}
		}
		n, err := c.conn.Write(chunk)
		if n > 0 {
			c.sent.Add(int64(n))
			off = (off + n) % blockLen
		}
		if err != nil {
			if (!deadline.IsZero() || c.stop.Load()) && errors.Is(err, unix.ETIMEDOUT) || isTimeout(err) {
				break
			}
			c.err = fmt.Errorf("send: %w", err)
			return
		}
	}
	_ = c.conn.SetWriteDeadline(time.Time{})
	if err := c.conn.CloseWrite(); err != nil {
		c.err = fmt.Errorf("half-close: %w", err)
		return
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	var reply [16]byte
	if _, err := io.ReadFull(c.conn, reply[:]); err != nil {
		// Give up on it: abort (RST on close) rather than leave the kernel
		// sending what is still queued, which would load the paths for
		// whatever runs next.
		_ = c.conn.SetLinger(0)
		c.err = fmt.Errorf("reading the server's receipt: %w", err)
		return
	}
	c.res = Result{
		Sent:      c.sent.Load(),
		Delivered: int64(binary.BigEndian.Uint64(reply[:8])),
		Duration:  time.Since(c.start),
		FirstBad:  int64(binary.BigEndian.Uint64(reply[8:])),
		CC:        c.cc,
		Local:     c.local,
	}
	c.res.Intact = c.res.Delivered == c.res.Sent && c.res.FirstBad < 0
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Run is Start and Wait.
func Run(o Options) (Result, error) {
	c, err := Start(o)
	if err != nil {
		return Result{}, err
	}
	return c.Wait()
}

func congestionControl(c *net.TCPConn) string {
	rc, err := c.SyscallConn()
	if err != nil {
		return ""
	}
	var name string
	_ = rc.Control(func(fd uintptr) {
		name, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	return name
}

// ListenIn listens on addr inside the named network namespace ("" for the
// current one); mptcp selects IPPROTO_MPTCP, and control (if not nil) runs
// on the socket before it binds. The listener stays in the namespace.
func ListenIn(ns string, addr netip.AddrPort, mptcp bool, control func(fd int) error) (net.Listener, error) {
	var ln net.Listener
	listen := func() error {
		lc := net.ListenConfig{Control: rawControl(control)}
		lc.SetMultipathTCP(mptcp)
		l, err := lc.Listen(context.Background(), "tcp", addr.String())
		ln = l
		return err
	}
	if err := inNetns(ns, listen); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Dial connects to remote from the named network namespace ("" for the
// current one), from local if it is valid; control (if not nil) runs on
// the socket before it connects.
func Dial(ns string, local netip.Addr, remote netip.AddrPort, mptcp bool, control func(fd int) error) (*net.TCPConn, error) {
	var conn net.Conn
	dial := func() error {
		d := net.Dialer{Timeout: 5 * time.Second, Control: rawControl(control)}
		d.SetMultipathTCP(mptcp)
		if local.IsValid() {
			d.LocalAddr = &net.TCPAddr{IP: local.AsSlice()}
		}
		c, err := d.Dial("tcp", remote.String())
		conn = c
		return err
	}
	if err := inNetns(ns, dial); err != nil {
		return nil, fmt.Errorf("connect to %s: %w", remote, err)
	}
	return conn.(*net.TCPConn), nil
}

// WithCC is a Dial control that gives the socket congestion control cc
// (nil for "": the namespace's default).
func WithCC(cc string) func(fd int) error {
	if cc == "" {
		return nil
	}
	return func(fd int) error {
		if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc); err != nil {
			return fmt.Errorf("setting congestion control %q: %w", cc, err)
		}
		return nil
	}
}

func rawControl(control func(fd int) error) func(_, _ string, rc syscall.RawConn) error {
	if control == nil {
		return nil
	}
	return func(_, _ string, rc syscall.RawConn) error {
		var cerr error
		if err := rc.Control(func(fd uintptr) { cerr = control(int(fd)) }); err != nil {
			return err
		}
		return cerr
	}
}

func inNetns(ns string, fn func() error) error {
	if ns == "" {
		return fn()
	}
	return netns.Do(ns, fn)
}
