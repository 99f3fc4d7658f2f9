// SPDX-License-Identifier: Apache-2.0

// Package connctl changes live MPTCP connections: SetCC switches the
// congestion control of every subflow of one connection, found by its token.
//
// Mechanism (bpf/setcc.bpf.c): an iter/tcp BPF iterator, read from inside the
// connection's network namespace (a BPF TCP iterator walks the namespace of
// the process that reads it), visits every TCP socket with the socket locked,
// picks the MPTCP subflows whose connection has the token, and calls
// bpf_setsockopt(TCP_CONGESTION) on each. Only the network namespace is
// entered (setns on one OS thread), never the mount namespace: `ip netns exec`
// remounts /sys, and nothing here needs it.
package connctl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// Errors callers can test for (errors.Is).
var (
	ErrNotRoot       = kernel.ErrNotRoot
	ErrNoConnection  = errors.New("no MPTCP connection with token")
	ErrNotRegistered = kernel.ErrNotRegistered
	ErrBadToken      = errors.New("bad token")
)

// Subflow is one subflow the switch found.
type Subflow struct {
	Local     netip.AddrPort `json:"local"`
	Remote    netip.AddrPort `json:"remote"`
	SubflowID uint32         `json:"subflow_id"`
	State     string         `json:"state"`
	From      string         `json:"from"` // the CC it ran before
	Err       error          `json:"-"`    // nil: it runs the new CC now
}

// Result of a switch.
type Result struct {
	Token    uint32    `json:"token"`
	CC       string    `json:"cc"`
	NetNS    string    `json:"netns"` // "" for the caller's
	Subflows []Subflow `json:"subflows"`
}

// Switched counts the subflows that now run the new congestion control.
func (r Result) Switched() int {
	n := 0
	for _, s := range r.Subflows {
		if s.Err == nil {
			n++
		}
	}
	return n
}

// ParseToken reads a connection token as `mptcp-cc subflows` and `ss -M`
// print it: hexadecimal, with or without 0x.
func ParseToken(s string) (uint32, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0x"), "0X")
	if t == "" {
		return 0, fmt.Errorf("%w %q: give the connection's token in hex, as `mptcp-cc subflows` shows it", ErrBadToken, s)
	}
	v, err := strconv.ParseUint(t, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%w %q: want up to 8 hex digits, as `mptcp-cc subflows` shows it", ErrBadToken, s)
	}
	return uint32(v), nil
}

// SetCC switches every subflow of the MPTCP connection with the given token
// in the named network namespace ("" for the caller's) to the congestion
// control cc. It fails when no subflow has the token, and when any subflow
// could not be switched (the Result then says which).
//
// The MPTCP socket itself keeps the CC it had: subflows that join the
// connection later get that one (unless a cgroup policy covers the
// connection: its joins follow their established siblings).
func SetCC(token uint32, cc, netnsName string) (Result, error) {
	res := Result{Token: token, CC: cc, NetNS: netnsName}
	if err := kernel.CheckPrivileges(); err != nil {
		return res, err
	}
	if err := kernel.NeedSet.Check(); err != nil {
		return res, err
	}
	if err := checkCC(cc); err != nil {
		return res, err
	}
	nsPath := "/proc/thread-self/ns/net"
	if netnsName != "" {
		if err := netns.CheckName(netnsName); err != nil {
			return res, err
		}
		if !netns.Exists(netnsName) {
			return res, fmt.Errorf("network namespace %q does not exist (`ip netns list` shows them)", netnsName)
		}
		nsPath = netns.Path(netnsName)
	}

	spec, err := loadSetcc()
	if err != nil {
		return res, err
	}
	var name [16]byte
	copy(name[:], cc)
	if err := spec.Variables["target_token"].Set(token); err != nil {
		return res, err
	}
	if err := spec.Variables["target_cc"].Set(name); err != nil {
		return res, err
	}
	var objs setccObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return res, fmt.Errorf("the kernel's verifier rejected the switch program: %+v", ve)
		}
		return res, fmt.Errorf("loading the switch program: %w", err)
	}
	defer objs.Close()
	it, err := link.AttachIter(link.IterOptions{Program: objs.MptcpCcSetcc})
	if err != nil {
		return res, fmt.Errorf("creating the TCP iterator: %w", err)
	}
	defer it.Close()

	var out []byte
	read := func() error {
		rd, err := it.Open()
		if err != nil {
			return fmt.Errorf("opening the TCP iterator: %w", err)
		}
		defer rd.Close()
		out, err = io.ReadAll(rd)
		if err != nil {
			return fmt.Errorf("reading the TCP iterator: %w", err)
		}
		return nil
	}
	if netnsName == "" {
		err = read()
	} else {
		err = netns.DoPath(nsPath, read)
	}
	if err != nil {
		return res, err
	}

	res.Subflows, err = decodeRecords(out)
	if err != nil {
		return res, err
	}
	where := "this network namespace"
	if netnsName != "" {
		where = "network namespace " + netnsName
	}
	if len(res.Subflows) == 0 {
		return res, fmt.Errorf("%w %08x in %s (the token is the local end's: `mptcp-cc subflows` or `ss -Mi` in that namespace shows it)", ErrNoConnection, token, where)
	}
	if n := res.Switched(); n < len(res.Subflows) {
		var first error
		for _, s := range res.Subflows {
			if s.Err != nil {
				first = s.Err
				break
			}
		}
		return res, fmt.Errorf("switched %d of %d subflows of connection %08x to %s: %w", n, len(res.Subflows), token, cc, first)
	}
	return res, nil
}

var recordSize = int(unsafe.Sizeof(setccSetccRecord{}))

func decodeRecords(b []byte) ([]Subflow, error) {
	if len(b)%recordSize != 0 {
		return nil, fmt.Errorf("iterator output of %d bytes is not a whole number of %d-byte records", len(b), recordSize)
	}
	var out []Subflow
	for off := 0; off < len(b); off += recordSize {
		var r setccSetccRecord
		if err := binary.Read(bytes.NewReader(b[off:off+recordSize]), binary.NativeEndian, &r); err != nil {
			return nil, err
		}
		out = append(out, r.subflow())
	}
	return out, nil
}

var tcpStates = map[uint16]string{
	1: "established", 2: "syn-sent", 3: "syn-recv", 4: "fin-wait-1", 5: "fin-wait-2",
	6: "time-wait", 7: "close", 8: "close-wait", 9: "last-ack", 10: "listen", 11: "closing",
}

func (r setccSetccRecord) subflow() Subflow {
	s := Subflow{SubflowID: r.SubflowId, State: tcpStates[r.State]}
	if s.State == "" {
		s.State = strconv.Itoa(int(r.State))
	}
	if r.Family == unix.AF_INET6 {
		s.Local = netip.AddrPortFrom(netip.AddrFrom16(r.Saddr).Unmap(), r.Sport)
		s.Remote = netip.AddrPortFrom(netip.AddrFrom16(r.Daddr).Unmap(), r.Dport)
	} else {
		s.Local = netip.AddrPortFrom(netip.AddrFrom4([4]byte(r.Saddr[:4])), r.Sport)
		s.Remote = netip.AddrPortFrom(netip.AddrFrom4([4]byte(r.Daddr[:4])), r.Dport)
	}
	s.From = kernel.CString(r.From[:])
	if r.Err != 0 {
		s.Err = syscall.Errno(-r.Err)
	}
	return s
}

func checkCC(name string) error { return kernel.RequireCongestionControl(name) }
