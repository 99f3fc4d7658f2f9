// SPDX-License-Identifier: Apache-2.0

// Package kmsg reads the kernel log (/dev/kmsg) so that a test run can
// fail on kernel faults it provoked: a WARN or BUG, an oops, a BPF or
// struct_ops error. Records carry a sequence number, so "what was logged
// while the suite ran" is exact even when the ring buffer wraps.
package kmsg

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Record is one kernel log record.
type Record struct {
	Seq      uint64
	Priority int // syslog level, 0 (emerg) .. 7 (debug)
	Text     string
}

func (r Record) String() string {
	return fmt.Sprintf("[seq %d, level %d] %s", r.Seq, r.Priority, r.Text)
}

// Read returns every record still in the kernel's ring buffer with a
// sequence number above after. It needs CAP_SYSLOG (root).
func Read(after uint64) ([]Record, error) {
	// Raw syscalls: an *os.File would hand the non-blocking descriptor to
	// Go's poller, which waits for more records instead of returning EAGAIN.
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening /dev/kmsg: %w", err)
	}
	defer unix.Close(fd)
	var out []Record
	buf := make([]byte, 8192) // one read returns one record, at most 8 KiB
	for {
		n, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return out, nil
		case errors.Is(err, unix.EPIPE):
			continue // records were overwritten while we read: go on
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return out, fmt.Errorf("reading /dev/kmsg: %w", err)
		}
		r, ok := parse(string(buf[:n]))
		if ok && r.Seq > after {
			out = append(out, r)
		}
	}
}

// Last is the sequence number of the newest record.
func Last() (uint64, error) {
	recs, err := Read(0)
	if err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		return 0, nil
	}
	return recs[len(recs)-1].Seq, nil
}

// parse reads "prio,seq,ts,flags[,...];message\n continuation lines".
func parse(s string) (Record, bool) {
	head, msg, ok := strings.Cut(s, ";")
	if !ok {
		return Record{}, false
	}
	f := strings.Split(head, ",")
	if len(f) < 3 {
		return Record{}, false
	}
	prio, err1 := strconv.Atoi(f[0])
	seq, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return Record{}, false
	}
	// Continuation lines (" KEY=value" dictionary) are metadata.
	msg, _, _ = strings.Cut(msg, "\n")
	return Record{Seq: seq, Priority: prio & 7, Text: msg}, true
}

// faultRE matches what the kernel logs when something is wrong in it or
// in a BPF program it runs: WARN_ON (WARNING: CPU...), BUG()/BUG:, oopses
// and general protection faults, sanitizer reports, refcount and list
// corruption, RCU stalls, and errors of BPF struct_ops registration.
var faultRE = regexp.MustCompile(`WARNING: CPU|WARNING: at |^BUG[: ]|kernel BUG at|Oops|general protection fault|Call Trace:|` +
	`UBSAN:|KASAN:|KFENCE:|refcount_t:|list_add corruption|list_del corruption|rcu_sched self-detected stall|rcu: INFO: rcu_preempt|` +
	`BPF:.*(error|invalid|failed)|bpf_struct_ops.*(error|fail)|struct_ops.*(error|fail)|verifier`)

// Faults returns the records that report a kernel fault.
func Faults(recs []Record) []Record {
	var out []Record
	for _, r := range recs {
		if faultRE.MatchString(r.Text) {
			out = append(out, r)
		}
	}
	return out
}

// Release is the running kernel's release (uname -r), which KnownFaults'
// signatures name.
func Release() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
