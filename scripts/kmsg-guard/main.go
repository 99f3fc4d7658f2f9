// SPDX-License-Identifier: Apache-2.0

// kmsg-guard runs a command (the test suite, the soak) and fails if the
// kernel logged a fault while it ran: a WARN, BUG or oops, a sanitizer
// report, a BPF or struct_ops error (internal/kmsg). The command's own
// exit status wins when it failed.
//
//	go run ./scripts/kmsg-guard -- go test ./...
package main

import (
	"errors"
	"fmt"
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
	faults := kmsg.Faults(recs)
	for _, r := range faults {
		fmt.Fprintf(os.Stderr, "kmsg-guard: kernel fault logged during the run: %s\n", r)
	}
	if len(faults) > 0 {
		// Show the context: every record of the run from the first fault on.
		for _, r := range recs {
			if r.Seq >= faults[0].Seq && r.Seq < faults[0].Seq+40 {
				fmt.Fprintf(os.Stderr, "  %s\n", r.Text)
			}
		}
	}
	var ee *exec.ExitError
	switch {
	case errors.As(runErr, &ee):
		os.Exit(ee.ExitCode())
	case runErr != nil:
		fmt.Fprintf(os.Stderr, "kmsg-guard: %v\n", runErr)
		os.Exit(2)
	case len(faults) > 0:
		fmt.Fprintf(os.Stderr, "kmsg-guard: FAIL: %d kernel fault(s) logged while the command ran (above)\n", len(faults))
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "kmsg-guard: no kernel fault logged (%d records during the run)\n", len(recs))
}
