// SPDX-License-Identifier: Apache-2.0

package blocking

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// The stream is a sequence of fixed-size records. Each starts with its
// own offset in the stream and the wall-clock time (Unix ns) the sender
// handed it to its socket, both big-endian; the rest is filler.
const recordHeader = 16

// DefaultRecordSize is the record size when none is given: smaller than
// a segment, so most segments carry parts of two records and a record's
// completion depends on the segments around it as it would for an
// application's messages.
const DefaultRecordSize = 1000

// SendOptions say what a sender writes.
type SendOptions struct {
	RecordSize int           // bytes per record (>= 16)
	Bytes      int64         // stop after this many bytes (whole records)...
	For        time.Duration // ...or after this long (Bytes == 0)
	// RateBits paces the records at this many bits/s of stream; 0 writes
	// as fast as the socket takes them (a bulk transfer).
	RateBits float64
}

// Send writes records to w, one write per record, each stamped just
// before its write, and returns the bytes written.
func Send(w io.Writer, o SendOptions) (int64, error) {
	if o.RecordSize < recordHeader {
		return 0, fmt.Errorf("record size %d: at least %d", o.RecordSize, recordHeader)
	}
	if o.Bytes <= 0 && o.For <= 0 {
		return 0, errors.New("send: neither a byte count nor a duration")
	}
	rec := make([]byte, o.RecordSize)
	for i := recordHeader; i < len(rec); i++ {
		rec[i] = byte(i)
	}
	start := time.Now()
	var off int64
	for {
		if o.Bytes > 0 && off+int64(o.RecordSize) > o.Bytes {
			return off, nil
		}
		if o.Bytes <= 0 && time.Since(start) >= o.For {
			return off, nil
		}
		if o.RateBits > 0 {
			due := start.Add(time.Duration(float64(off*8) / o.RateBits * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		binary.BigEndian.PutUint64(rec[0:8], uint64(off))
		binary.BigEndian.PutUint64(rec[8:16], uint64(time.Now().UnixNano()))
		if _, err := w.Write(rec); err != nil {
			return off, fmt.Errorf("writing the record at %d: %w", off, err)
		}
		off += int64(o.RecordSize)
	}
}

// Read is one record as the receiving application got it.
type Read struct {
	Offset uint64
	Sent   time.Time // the sender's stamp
	Read   time.Time // when the read that completed it returned
}

// Receive reads records from r until EOF and notes when each was
// complete in the application's hands. A record whose offset field is
// not its position means the stream was damaged: an error.
func Receive(r io.Reader, recordSize int) ([]Read, error) {
	if recordSize < recordHeader {
		return nil, fmt.Errorf("record size %d: at least %d", recordSize, recordHeader)
	}
	buf := make([]byte, 64<<10)
	rec := make([]byte, 0, recordSize)
	var out []Read
	var off uint64
	for {
		n, err := r.Read(buf)
		now := time.Now()
		b := buf[:n]
		for len(b) > 0 {
			k := min(len(b), recordSize-len(rec))
			rec = append(rec, b[:k]...)
			b = b[k:]
			if len(rec) < recordSize {
				break
			}
			if got := binary.BigEndian.Uint64(rec[0:8]); got != off {
				return out, fmt.Errorf("the record at offset %d says it is at %d: the stream is damaged", off, got)
			}
			sent := time.Unix(0, int64(binary.BigEndian.Uint64(rec[8:16])))
			out = append(out, Read{Offset: off, Sent: sent, Read: now})
			off += uint64(recordSize)
			rec = rec[:0]
		}
		if errors.Is(err, io.EOF) {
			if len(rec) > 0 {
				return out, fmt.Errorf("the stream ended %d bytes into the record at %d", len(rec), off)
			}
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}
