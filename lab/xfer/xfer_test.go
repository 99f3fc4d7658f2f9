// SPDX-License-Identifier: Apache-2.0

package xfer

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// The server's check finds the first wrong byte wherever it falls,
// including across the end of the repeated block.
func TestFirstDiff(t *testing.T) {
	stream := func(off, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = block[(off+i)%blockLen]
		}
		return b
	}
	off := blockLen - 100
	b := stream(off, 300)
	if i := firstDiff(b, int64(off)); i != -1 {
		t.Fatalf("intact data: first difference at %d", i)
	}
	b[150] ^= 1
	if i := firstDiff(b, int64(off)); i != 150 {
		t.Fatalf("flipped byte 150 (past the block's end): found %d", i)
	}
	// A lost segment shifts everything after it.
	lost := append(stream(0, 1000), stream(2448, 1000)...)
	if i := firstDiff(lost, 0); i < 1000 || i > 1010 {
		t.Fatalf("segment lost at 1000: found %d", i)
	}
}

// A client that goes silent without closing does not keep Close waiting:
// after the grace period the server aborts the connection and says so.
func TestCloseAbortsSilentConnection(t *testing.T) {
	defer func(g time.Duration) { closeGrace = g }(closeGrace)
	closeGrace = 200 * time.Millisecond
	srv, err := Listen("", netip.MustParseAddrPort("127.0.0.1:0"), false)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial("", netip.Addr{}, srv.Addr(), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(block[:1000]); err != nil {
		t.Fatal(err)
	}
	r, err := srv.Conn(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(c.LocalAddr().(*net.TCPAddr).Port)))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close still waiting 5 s after a 200 ms grace")
	}
	if took := time.Since(start); took < closeGrace {
		t.Fatalf("Close returned after %v, before the grace of %v", took, closeGrace)
	}
	<-r.done
	if r.Err == nil {
		t.Fatal("the aborted connection's record has no error")
	}
}

// Stop ends a timed transfer at once, and what was sent before it is
// still delivered and checked.
func TestStopEndsSendingEarly(t *testing.T) {
	srv, err := Listen("", netip.MustParseAddrPort("127.0.0.1:0"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := Start(Options{Remote: srv.Addr(), For: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); c.Sent() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nothing sent in 5 s")
		}
	}
	start := time.Now()
	c.Stop()
	res, err := c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Stop took %v to end a 1-minute transfer", took)
	}
	if res.Sent == 0 || !res.Intact {
		t.Fatalf("after Stop: sent %d, delivered %d, intact %v", res.Sent, res.Delivered, res.Intact)
	}
}
