package cc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cilium/ebpf/ringbuf"
)

// Trace event kinds (MPCC_TRACE_* in bpf/include/cc_types.h).
const (
	TraceAvoid = 1 // a congestion-avoidance step
	TraceLoss  = 2 // the window chosen after a loss
	TraceLISA  = 3 // a LISA donor repaid the window a joiner took
)

// TraceReducing in TraceEvent.Flags: a LISA repayment during a window
// reduction (CWR, Recovery or Loss).
const TraceReducing = 1

// TracePath mirrors struct mpcc_path.
type TracePath struct {
	Cwnd      uint32
	SRTTUs    uint32
	MinRTTUs  uint32
	Pad       uint32
	LossBytes uint64
}

// TraceEvent mirrors struct mpcc_trace_event: one decision with every
// input it was made from.
type TraceEvent struct {
	ID            uint64
	Kind          uint32
	Acked         uint32
	CwndBefore    uint32
	CwndAfter     uint32
	AccBefore     int64
	AccAfter      int64
	Ssthresh      uint32
	SsthreshAfter uint32
	Clamp         uint32 // LISA: the loss window (prior_cwnd)
	Flags         uint32 // LISA: TraceReducing
	Coupled       int64
	N             uint32
	TargetUs      uint32
	Paths         [8]TracePath
}

// TraceReader collects trace events of a loaded congestion control in the
// background until Stop.
type TraceReader struct {
	rd     *ringbuf.Reader
	mu     sync.Mutex
	events []TraceEvent
	err    error
	done   chan struct{}
}

// ReadTrace starts collecting from the pinned trace ring buffer of name.
func ReadTrace(root, name string) (*TraceReader, error) {
	m, err := OpenTrace(root, name)
	if err != nil {
		return nil, err
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
		var e TraceEvent
		// The size check is what keeps this mirror honest: the event type
		// never reaches the object's BTF (only a local pointer uses it).
		if len(rec.RawSample) != binary.Size(e) {
			t.setErr(fmt.Errorf("trace event of %d bytes, the Go mirror has %d: bpf/include/cc_types.h and pkg/cc/trace.go disagree", len(rec.RawSample), binary.Size(e)))
			return
		}
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &e); err != nil {
			t.setErr(fmt.Errorf("decoding a trace event of %d bytes: %w", len(rec.RawSample), err))
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

// Stop drains what is buffered and returns every event read.
func (t *TraceReader) Stop() ([]TraceEvent, error) {
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
