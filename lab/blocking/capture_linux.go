// SPDX-License-Identifier: Apache-2.0

package blocking

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// Sink takes captured packets: a Tracker, or any other analysis of them.
type Sink interface {
	Add(p Packet, at time.Time, inbound bool)
}

// Capture listens on every interface of a network namespace (an AF_PACKET
// socket, both directions) and feeds the TCP packets to a Sink. Each
// packet is stamped by the kernel when the interface handed it over
// (SO_TIMESTAMPNS, CLOCK_REALTIME): the moment it reached the host.
type Capture struct {
	fd    int
	snap  int // bytes kept of each packet, from its IP header on
	sink  Sink
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	stats CaptureStats
	err   error
}

// CaptureStats say how complete a capture was.
type CaptureStats struct {
	Packets uint64 // TCP packets parsed
	Drops   uint64 // packets the kernel dropped because the socket's buffer was full
	// Restamped counts packets whose kernel timestamp was not a wall-clock
	// time near their receipt (a forwarded packet can keep a monotonic
	// departure time): they were stamped with the reader's clock instead.
	Restamped uint64
	Malformed uint64 // TCP packets whose options did not parse
}

// snapLen is what StartCapture keeps of each packet: the longest IPv4 and
// TCP headers (60 bytes each) and some.
const snapLen = 160

// tcpFilter passes IPv4 TCP packets, cut to snap bytes, and nothing else,
// so the reader copies only what it asked for. A SOCK_DGRAM packet socket
// runs it on the packet from its network header.
func tcpFilter(snap int) []unix.SockFilter {
	return []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: adProtocol},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 3, K: unix.ETH_P_IP},
		{Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 9},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.IPPROTO_TCP},
		{Code: unix.BPF_RET | unix.BPF_K, K: uint32(snap)},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0},
	}
}

// adProtocol is SKF_AD_OFF + SKF_AD_PROTOCOL (linux/filter.h: -0x1000 + 0),
// the classic-BPF load of the packet's ethertype.
const adProtocol = 0xfffff000

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// StartCapture starts capturing the headers of every TCP packet in the
// named namespace ("" for the current one). The sink's Add is called from
// the capture's goroutine, one packet at a time, until Stop returns.
func StartCapture(ns string, sink Sink) (*Capture, error) {
	return StartCaptureSnap(ns, snapLen, sink)
}

// StartCaptureSnap is StartCapture keeping snap bytes of each packet from
// its IP header on: with more than the headers, each Packet's Payload is
// a copy of the payload captured, the sink's to keep.
func StartCaptureSnap(ns string, snap int, sink Sink) (*Capture, error) {
	if snap < snapLen || snap > 1<<16 {
		return nil, fmt.Errorf("capture: snap length %d: want %d to 65536 bytes", snap, snapLen)
	}
	c := &Capture{fd: -1, snap: snap, sink: sink, stop: make(chan struct{}), done: make(chan struct{})}
	filter := tcpFilter(snap)
	open := func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		c.fd = fd
		prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
		if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
			return fmt.Errorf("attaching the TCP filter: %w", err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return fmt.Errorf("SO_TIMESTAMPNS: %w", err)
		}
		// Room for seconds of packets if the reader is descheduled (the
		// VM the experiments run in is slow).
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20); err != nil {
			return fmt.Errorf("SO_RCVBUFFORCE: %w", err)
		}
		tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}
	var err error
	if ns == "" {
		err = open()
	} else {
		err = netns.Do(ns, open)
	}
	if err != nil {
		if c.fd >= 0 {
			unix.Close(c.fd)
		}
		return nil, err
	}
	go c.run()
	return c, nil
}

func (c *Capture) run() {
	defer close(c.done)
	buf := make([]byte, c.snap)
	oob := make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))
	stopping := false
	for {
		n, oobn, _, from, err := unix.Recvmsg(c.fd, buf, oob, 0)
		now := time.Now()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			if stopping {
				return // drained
			}
			select {
			case <-c.stop:
				stopping = true // read what is queued, then stop
			default:
			}
			continue
		}
		if err != nil {
			c.fail(fmt.Errorf("reading the capture: %w", err))
			return
		}
		ll, ok := from.(*unix.SockaddrLinklayer)
		if !ok || ll.Protocol != htons(unix.ETH_P_IP) {
			continue
		}
		inbound := ll.Pkttype != unix.PACKET_OUTGOING
		at, restamped := stamp(oob[:oobn], now)
		p, err := ParsePacket(buf[:n])
		c.mu.Lock()
		switch {
		case errors.Is(err, ErrNotTCP):
		case err != nil:
			c.stats.Malformed++
		default:
			if c.snap == snapLen {
				p.Payload = nil // a few bytes at most: the tracker has no use for them
			} else if p.Payload != nil {
				p.Payload = bytes.Clone(p.Payload) // buf is read into again
			}
			c.stats.Packets++
			if restamped {
				c.stats.Restamped++
			}
			c.sink.Add(p, at, inbound)
		}
		c.mu.Unlock()
		if !stopping {
			select {
			case <-c.stop:
				stopping = true
			default:
			}
		}
	}
}

// stamp returns the kernel's receive time of a packet, or the reader's
// clock when the kernel's is absent or not a wall-clock time within a
// minute of now.
func stamp(oob []byte, now time.Time) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return now, true
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_TIMESTAMPNS ||
			len(m.Data) < int(unsafe.Sizeof(unix.Timespec{})) {
			continue
		}
		ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
		at := time.Unix(ts.Unix())
		if d := now.Sub(at); d < -time.Minute || d > time.Minute {
			return now, true
		}
		return at, false
	}
	return now, true
}

func (c *Capture) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// Stop ends the capture once what the socket holds is read, and returns
// its statistics.
func (c *Capture) Stop() (CaptureStats, error) {
	close(c.stop)
	<-c.done
	c.Drops()
	unix.Close(c.fd)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats, c.err
}

// Drops is how many packets the kernel has dropped so far because the
// capture's buffer was full. (Each read of the kernel's count resets it,
// so the capture keeps the sum.)
func (c *Capture) Drops() uint64 {
	st, err := unix.GetsockoptTpacketStats(c.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.stats.Drops += uint64(st.Drops)
	} else if c.err == nil {
		c.err = fmt.Errorf("reading the capture's drop count: %w", err)
	}
	return c.stats.Drops
}
