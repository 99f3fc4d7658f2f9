package sched

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/mptcp-cc/mptcp-cc/pkg/schedmodel"
)

// TraceReader collects the decisions of a scheduler loaded with
// Params.Trace, in the background until Stop.
type TraceReader struct {
	rd     *ringbuf.Reader
	mu     sync.Mutex
	events []schedmodel.Trace
	err    error
	done   chan struct{}
}

// ReadTrace starts collecting from the pinned trace ring buffer of name.
func ReadTrace(root, name string) (*TraceReader, error) {
	if root == "" {
		root = DefaultPinRoot
	}
	m, err := ebpf.LoadPinnedMap(filepath.Join(root, name, "trace"), nil)
	if err != nil {
		return nil, fmt.Errorf("opening the trace of %s: %w", name, err)
	}
	defer m.Close()
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, err
	}
	t := &TraceReader{rd: rd, done: make(chan struct{})}
	go t.loop()
	return t, nil
}

func (t *TraceReader) loop() {
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
		var e schedmodel.Trace
		if len(rec.RawSample) != binary.Size(e) {
			t.setErr(fmt.Errorf("trace record of %d bytes, the Go mirror has %d: bpf/include/sched_types.h and pkg/schedmodel/types.go disagree", len(rec.RawSample), binary.Size(e)))
			return
		}
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &e); err != nil {
			t.setErr(err)
			return
		}
		t.mu.Lock()
		t.events = append(t.events, e)
		t.mu.Unlock()
	}
}

func (t *TraceReader) setErr(err error) {
	t.mu.Lock()
	t.err = err
	t.mu.Unlock()
}

// Stop drains what is buffered and returns every decision read.
func (t *TraceReader) Stop() ([]schedmodel.Trace, error) {
	if err := t.rd.Flush(); err != nil {
		t.setErr(err)
	}
	<-t.done
	t.rd.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.events, t.err
}
