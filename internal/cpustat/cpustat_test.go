// SPDX-License-Identifier: Apache-2.0

package cpustat

import (
	"errors"
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	a, err := Steal()
	if err != nil {
		t.Fatal(err)
	}
	w, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	// Steal counts in 10 ms ticks per CPU, so a fully stolen window can
	// read up to one tick per CPU over 1.
	if f := w.Stolen(); f < 0 || f > 1.1 {
		t.Errorf("stolen fraction %v, want within [0, 1.1]", f)
	}
	if b, err := Steal(); err != nil || b < a {
		t.Errorf("steal went from %v to %v (%v)", a, b, err)
	}
}

// recorder stands in for the test that Attempts judges.
type recorder struct {
	testing.TB
	errors, logs int
}

func (r *recorder) Helper()                   {}
func (r *recorder) Error(...any)              { r.errors++ }
func (r *recorder) Logf(string, ...any)       { r.logs++ }
func (r *recorder) Fatal(args ...any)         { r.TB.Fatal(args...) }
func (r *recorder) Fatalf(f string, a ...any) { r.TB.Fatalf(f, a...) }

func TestAttempts(t *testing.T) {
	// The first success ends the attempts, and nothing is failed.
	r := &recorder{TB: t}
	calls := 0
	Attempts(r, 3, func(attempt int) error {
		calls++
		if attempt < 2 {
			return errors.New("out of bounds")
		}
		return nil
	})
	if calls != 2 || r.errors != 0 {
		t.Errorf("success on attempt 2: %d calls, %d errors; want 2 and 0", calls, r.errors)
	}

	// A figure that misses every time fails the test on a quiet host (this
	// one, unless the host steals the CPU during these few microseconds).
	r = &recorder{TB: t}
	calls = 0
	Attempts(r, 3, func(int) error { calls++; return errors.New("out of bounds") })
	if calls != 3 {
		t.Errorf("%d attempts, want 3", calls)
	}
	if r.errors != 1 {
		t.Errorf("every attempt missed: %d errors, want 1", r.errors)
	}
}
