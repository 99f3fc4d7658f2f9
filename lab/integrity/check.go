// SPDX-License-Identifier: Apache-2.0

package integrity

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// Pattern is the payload of connection seed: size bytes from ChaCha8 keyed
// by the seed. Every connection's payload differs from every other's, and
// any 16 of its bytes occur once in it (a repeat is a 2^-128 event), so
// wrong bytes can be traced to where they were sent.
func Pattern(seed uint64, size int) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	copy(key[8:], "mptcp-cc integrity pattern")
	b := make([]byte, size)
	rand.NewChaCha8(key).Read(b)
	return b
}

// window is how many bytes from the first wrong one a finding keeps, and
// probe how many of them it looks up in the sent payloads.
const (
	window = 32
	probe  = 16
	// rejoin right bytes in a row end a stretch of wrong ones: wrong bytes
	// match the right ones by chance 1 time in 256, so a few right bytes
	// inside a wrong stretch do not end it.
	rejoin = 8
)

// Finding describes a connection that delivered wrong bytes.
type Finding struct {
	Conn   int    `json:"conn"`   // connection number within its arm
	Offset int64  `json:"offset"` // first wrong byte
	Wrong  int    `json:"wrong"`  // bytes that differ, in all
	Run    int    `json:"run"`    // length of the first stretch of wrong bytes (up to rejoin right ones in a row)
	Got    []byte `json:"got"`    // window bytes delivered from Offset
	Want   []byte `json:"want"`   // what was sent there
	// Where the probe bytes from Offset were sent: offsets in this
	// connection's payload (a misplaced segment: the kernel's mapping or
	// reassembly), in another connection's (data crossing connections:
	// reuse of memory), or neither (overwritten memory).
	Here  []int64 `json:"here,omitempty"`
	Other []Place `json:"other,omitempty"`
	Zero  bool    `json:"zero"` // the probe bytes are all zero
	// Counters of something amiss that moved during the connection (see
	// kernel.MPTCPAnomalies), at either end.
	Counters map[string]uint64 `json:"counters,omitempty"`
	// Wire is the connection's segments as the server received them,
	// checked against their mappings (arms with +wire).
	Wire *Wire `json:"wire,omitempty"`
}

// Place is where bytes were sent: an offset in a connection's payload.
type Place struct {
	Conn   int   `json:"conn"`
	Offset int64 `json:"offset"`
}

// Origin says in words where a finding's wrong bytes came from.
func (f Finding) Origin() string {
	switch {
	case len(f.Here) > 0:
		return "sent elsewhere in this connection"
	case len(f.Other) > 0:
		return fmt.Sprintf("sent by connection %d at offset %d", f.Other[0].Conn, f.Other[0].Offset)
	case f.Zero:
		return "zeros"
	}
	return "sent nowhere"
}

// LookIn records where in another connection's payload the wrong bytes
// had been sent, if anywhere.
func (f *Finding) LookIn(conn int, payload []byte) {
	if len(f.Got) < probe {
		return
	}
	for _, off := range indexAll(payload, f.Got[:probe]) {
		f.Other = append(f.Other, Place{Conn: conn, Offset: off})
	}
}

// Shift is, for wrong bytes sent elsewhere in this connection, how far
// from the first wrong offset they were sent (negative: earlier data, as
// when an old segment lands where a later one belongs).
func (f Finding) Shift() (int64, bool) {
	if len(f.Here) != 1 {
		return 0, false
	}
	return f.Here[0] - f.Offset, true
}

// Check compares what a connection delivered with what was sent. It
// returns nil when every byte is right. Length differences are the
// caller's to report; Check compares the bytes both have.
func Check(conn int, got, sent []byte) *Finding {
	n := min(len(got), len(sent))
	first := -1
	for i := 0; i < n; i++ {
		if got[i] != sent[i] {
			first = i
			break
		}
	}
	if first < 0 {
		return nil
	}
	f := &Finding{Conn: conn, Offset: int64(first)}
	right, ended := 0, false // right bytes in a row; the first stretch ends at rejoin of them
	for i := first; i < n; i++ {
		if got[i] == sent[i] {
			right++
			ended = ended || right >= rejoin
			continue
		}
		right = 0
		f.Wrong++
		if !ended {
			f.Run = i - first + 1
		}
	}
	end := min(first+window, n)
	f.Got = bytes.Clone(got[first:end])
	f.Want = bytes.Clone(sent[first:end])
	if end-first >= probe {
		p := got[first : first+probe]
		f.Here = indexAll(sent, p)
		f.Zero = bytes.Count(p, []byte{0}) == probe
	}
	return f
}

// indexAll is every offset of p in b.
func indexAll(b, p []byte) []int64 {
	var out []int64
	for off := 0; ; {
		i := bytes.Index(b[off:], p)
		if i < 0 {
			return out
		}
		out = append(out, int64(off+i))
		off += i + 1
	}
}
