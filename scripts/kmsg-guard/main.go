// SPDX-License-Identifier: Apache-2.0

// kmsg-guard runs a command (the test suite, the soak) and fails if the
// kernel logged a fault while it ran: a WARN, BUG or oops, a sanitizer
// report, a BPF or struct_ops error (internal/kmsg). A fault that
// docs/kernel-faults.md has traced to this host's kernel build
// (kmsg.KnownFaults: the release, the function and file:line) is reported
// with its section and counted, and does not fail the run: the guard
// judges the project, not a root-caused fault of the machine's kernel.
// The command's own exit status wins when it failed.
//
//	go run ./scripts/kmsg-guard -- go test ./...
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/mptcp-cc/mptcp-cc/internal/kmsg"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: kmsg-guard -- COMMAND [ARGS...]")
		os.Exit(2)
	}
	last, err := kmsg.Last()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kmsg-guard: reading /dev/kmsg: %v (needs root)\n", err)
		os.Exit(2)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	runErr := cmd.Run()

	recs, err := kmsg.Read(last)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kmsg-guard: reading /dev/kmsg: %v\n", err)
		os.Exit(2)
	}
	failed := report(os.Stderr, kmsg.Judge(recs, kmsg.Release()), len(recs))

	var ee *exec.ExitError
	switch {
	case errors.As(runErr, &ee):
		os.Exit(ee.ExitCode())
	case runErr != nil:
		fmt.Fprintf(os.Stderr, "kmsg-guard: %v\n", runErr)
		os.Exit(2)
	case failed:
		os.Exit(1)
	}
}

// report writes the verdict and says whether it fails the run.
func report(w io.Writer, v kmsg.Verdict, records int) (failed bool) {
	for _, in := range v.Known {
		fmt.Fprintf(w, "kmsg-guard: known host-kernel fault, not failing the run: %s\n", in)
	}
	for _, in := range v.Unknown {
		fmt.Fprintf(w, "kmsg-guard: kernel fault logged during the run: %s\n", in.Head())
		// The context: the incident's own records (a WARN's dump and trace).
		n := len(in.Records)
		if n > 40 {
			n = 40
		}
		for _, r := range in.Records[:n] {
			fmt.Fprintf(w, "  %s\n", r.Text)
		}
	}
	for _, c := range v.Counts() {
		fmt.Fprintf(w, "kmsg-guard: counted known host-kernel faults: %s\n", c)
	}
	if len(v.Unknown) > 0 {
		fmt.Fprintf(w, "kmsg-guard: FAIL: %d kernel fault(s) logged while the command ran (above); none is a known fault of this kernel build (internal/kmsg.KnownFaults)\n", len(v.Unknown))
		return true
	}
	if len(v.Known) == 0 {
		fmt.Fprintf(w, "kmsg-guard: no kernel fault logged (%d records during the run)\n", records)
	} else {
		fmt.Fprintf(w, "kmsg-guard: no unknown kernel fault logged (%d records during the run)\n", records)
	}
	return false
}
