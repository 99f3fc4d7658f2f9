// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Go timers are serviced by the runtime poller with millisecond granularity
// when the process is idle (measured here: time.Sleep(200µs) returns ~1 ms
// late), far too coarse for a delay line. A dedicated OS thread sleeping in
// nanosleep(2) with a 1 ns timer slack wakes within tens of microseconds.

// maxSleep bounds one nanosleep so that a closing Path is noticed quickly
// even when the configured delay is long.
const maxSleep = 20 * time.Millisecond

// lockPreciseThread pins the calling goroutine to its OS thread and makes
// that thread's sleeps precise. It is never unlocked: the goroutine's exit
// then destroys the thread, so the changed timer slack cannot leak into
// threads the runtime reuses for other goroutines.
func lockPreciseThread() {
	runtime.LockOSThread()
	// Best effort: the default 50 µs slack is still usable if this fails.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}

// sleepUntil blocks the current thread until t. It returns false without
// waiting out the time if stop becomes true.
func sleepUntil(t time.Time, stop *atomic.Bool) bool {
	for {
		if stop.Load() {
			return false
		}
		d := time.Until(t)
		if d <= 0 {
			return true
		}
		ts := unix.NsecToTimespec(int64(min(d, maxSleep)))
		// EINTR (the runtime preempts with signals) just loops and
		// recomputes the remaining time.
		_ = unix.Nanosleep(&ts, nil)
	}
}
