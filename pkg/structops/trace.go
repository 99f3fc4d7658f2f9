// SPDX-License-Identifier: Apache-2.0

package structops

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
)

// TraceReader collects the records of a trace ring buffer, decoded as T
// (the record's type as pkg/abi generates it), in the background until Stop.
type TraceReader[T any] struct {
	rd     *ringbuf.Reader
	types  string // the C record and T, for the size-mismatch error
	mu     sync.Mutex
	events []T
	err    error
	done   chan struct{}
}

// ReadTrace starts collecting from m (which it may close: the reader
// keeps its own reference). types names the C record and T, for the error
// when their sizes disagree.
func ReadTrace[T any](m *ebpf.Map, types string) (*TraceReader[T], error) {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, err
	}
	t := &TraceReader[T]{rd: rd, types: types, done: make(chan struct{})}
	go t.loop()
	return t, nil
}

func (t *TraceReader[T]) loop() {
	defer close(t.done)
	for {
		rec, err := t.rd.Read()
		if errors.Is(err, ringbuf.ErrFlushed) || errors.Is(err, os.ErrClosed) {
			return
		}
		if err != nil {
			t.setErr(err)
			return
		}
		var e T
		// T is generated from the header, but the object that wrote the
		// record may have been built from another version of it (the
		// record type need not reach that object's BTF): a size that
		// differs says so instead of decoding garbage.
		if len(rec.RawSample) != binary.Size(e) {
			t.setErr(fmt.Errorf("trace record of %d bytes, the Go type has %d: %s disagree (run `make generate`)", len(rec.RawSample), binary.Size(e), t.types))
			return
		}
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &e); err != nil {
			t.setErr(fmt.Errorf("decoding a trace record of %d bytes: %w", len(rec.RawSample), err))
			return
		}
		t.mu.Lock()
		t.events = append(t.events, e)
		t.mu.Unlock()
	}
}

func (t *TraceReader[T]) setErr(err error) {
	t.mu.Lock()
	t.err = err
	t.mu.Unlock()
}

// Stop drains what is buffered and returns every record read.
func (t *TraceReader[T]) Stop() ([]T, error) {
	// Flush, not a deadline: SetDeadline waits for the lock a blocked Read
	// holds. Flush makes Read return what is buffered, then ErrFlushed.
	if err := t.rd.Flush(); err != nil {
		t.setErr(err)
	}
	<-t.done
	t.rd.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.events, t.err
}
