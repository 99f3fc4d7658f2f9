// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/cli/clitest"
)

// Every command's -h is on stdout, names every flag in its synopsis with
// two dashes and a value name, as the man page and completions do.
func TestCommandsDocumented(t *testing.T) { clitest.Check(t, app) }
