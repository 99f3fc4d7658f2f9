// SPDX-License-Identifier: Apache-2.0

package blocking

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
)

// Options for one measured transfer: a client sending records to a server
// that reads them, with the server's host captured.
type Options struct {
	ServerNS, ClientNS string         // namespaces ("" for the current one)
	Listen             netip.AddrPort // the server's address (port 0: the kernel's choice)
	Local              netip.Addr     // the client's source address (zero: any)
	MPTCP              bool
	// CC is the client socket's congestion control ("" keeps the
	// namespace's default; an MPTCP socket passes it to its subflows).
	CC   string
	Send SendOptions // RecordSize 0: DefaultRecordSize
	// NoCapture skips the packet capture: no arrival times, so no
	// blocking times (goodput and delays only).
	NoCapture bool
	// Warmup is left out of the goodput.
	Warmup time.Duration
}

// Result of a measured transfer.
type Result struct {
	Samples  []Sample // one per record; Arrived is zero without a capture
	Reads    []Read
	Bytes    int64 // bytes the application read
	Duration time.Duration
	Goodput  float64 // bits/s after the warm-up
	Blocking Summary // receive-buffer blocking time (none without a capture)
	Delay    Summary // one-way delivery delay
	RcvBuf   int     // the accepted socket's SO_RCVBUF when it was accepted
	// From the capture:
	Subflows int // subflows the connection opened
	// SubflowBytes is the payload each subflow carried to the server,
	// retransmissions included, the initial subflow first.
	SubflowBytes []uint64
	MaxWindow    uint64 // largest receive window the server advertised, bytes
	Capture      CaptureStats
	Unmapped     uint64 // payload bytes the capture could not place in the stream
}

// Run performs one measured transfer.
func Run(o Options) (Result, error) {
	var res Result
	if o.Send.RecordSize == 0 {
		o.Send.RecordSize = DefaultRecordSize
	}
	ln, err := xfer.ListenIn(o.ServerNS, o.Listen, o.MPTCP, nil)
	if err != nil {
		return res, err
	}
	defer ln.Close()
	la := ln.Addr().(*net.TCPAddr).AddrPort()
	o.Listen = netip.AddrPortFrom(la.Addr().Unmap(), la.Port())

	tr := NewTracker()
	var capt *Capture
	if !o.NoCapture {
		if capt, err = StartCapture(o.ServerNS, tr); err != nil {
			return res, err
		}
	}
	stopCapture := func() error {
		if capt == nil {
			return nil
		}
		st, err := capt.Stop()
		capt = nil
		res.Capture = st
		return err
	}
	defer stopCapture() //nolint:errcheck // the error path already has one

	type served struct {
		reads  []Read
		remote netip.AddrPort
		rcvbuf int
		err    error
	}
	srv := make(chan served, 1)
	go func() {
		var s served
		c, err := ln.Accept()
		if err != nil {
			s.err = err
			srv <- s
			return
		}
		defer c.Close()
		ra := c.RemoteAddr().(*net.TCPAddr).AddrPort()
		s.remote = netip.AddrPortFrom(ra.Addr().Unmap(), ra.Port())
		s.rcvbuf = sockInt(c.(*net.TCPConn), unix.SO_RCVBUF)
		s.reads, s.err = Receive(c, o.Send.RecordSize)
		srv <- s
	}()

	start := time.Now()
	sent, serr := send(o)
	var s served
	select {
	case s = <-srv:
	case <-time.After(time.Minute):
		ln.Close()
		s = <-srv
		s.err = errors.Join(s.err, errors.New("the server did not finish reading within a minute of the last write"))
	}
	res.Duration = time.Since(start)
	if err := errors.Join(serr, s.err); err != nil {
		return res, err
	}
	res.Reads, res.RcvBuf = s.reads, s.rcvbuf
	res.Bytes = int64(len(s.reads)) * int64(o.Send.RecordSize)
	if res.Bytes != sent {
		return res, fmt.Errorf("sent %d bytes, the server read %d", sent, res.Bytes)
	}
	if res.Goodput, err = Goodput(s.reads, o.Send.RecordSize, o.Warmup); err != nil {
		return res, err
	}
	if err := stopCapture(); err != nil {
		return res, err
	}
	if o.NoCapture {
		res.Samples = make([]Sample, len(s.reads))
		for i, r := range s.reads {
			res.Samples[i] = Sample{Offset: r.Offset, Sent: r.Sent, Read: r.Read}
		}
		res.Delay = Summarize(Delays(res.Samples))
		return res, nil
	}
	if res.Capture.Drops > 0 {
		return res, fmt.Errorf("the capture dropped %d packets: arrival times are incomplete", res.Capture.Drops)
	}
	conn := tr.Conn(s.remote)
	if conn == nil {
		return res, fmt.Errorf("the capture saw no MPTCP connection from %s (is the connection MPTCP?)", s.remote)
	}
	res.Subflows, res.MaxWindow, res.Unmapped = conn.Subflows(), conn.MaxWindow, tr.Unmapped
	res.SubflowBytes = conn.SubflowBytes
	if res.Samples, err = Join(s.reads, o.Send.RecordSize, conn); err != nil {
		return res, err
	}
	res.Blocking = Summarize(Blockings(res.Samples))
	res.Delay = Summarize(Delays(res.Samples))
	return res, nil
}

func send(o Options) (int64, error) {
	conn, err := xfer.Dial(o.ClientNS, o.Local, o.Listen, o.MPTCP, xfer.WithCC(o.CC))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	n, err := Send(conn, o.Send)
	if err != nil {
		return n, err
	}
	return n, conn.CloseWrite()
}

func sockInt(c *net.TCPConn, opt int) int {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	var v int
	_ = rc.Control(func(fd uintptr) { v, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, opt) })
	return v
}
