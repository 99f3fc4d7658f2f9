// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"runtime"
	"sync"
)

// Each writer goroutine sleeps in nanosleep(2) on its own thread, and a
// goroutine in a system call keeps its P (the runtime's right to run Go
// code) until the scheduler's monitor takes it back, which can take up to
// 10 ms when the process is otherwise idle. With GOMAXPROCS = 2 and two
// sleeping writers, every other goroutine (the readers, the other writers)
// waited that long: measured idle RTT errors of 7 ms. Keeping one spare P
// per writer on top of one per CPU removes that wait; the kernel then
// shares the CPUs between the threads as usual.

var procs struct {
	sync.Mutex
	writers int
}

// reserveProcs accounts for n more writer threads and raises GOMAXPROCS if
// needed. It never lowers GOMAXPROCS, also not when paths close, so as not
// to undo a setting someone else made.
func reserveProcs(n int) {
	procs.Lock()
	defer procs.Unlock()
	procs.writers += n
	if want := runtime.NumCPU() + procs.writers; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
}

// releaseProcs accounts for n writer threads that ended.
func releaseProcs(n int) {
	procs.Lock()
	defer procs.Unlock()
	procs.writers -= n
}
