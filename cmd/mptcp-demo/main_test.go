// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/cli/clitest"
)

// mptcp-demo -h is the framework's: on stdout, flags with two dashes and a
// value name, every flag in the synopsis.
func TestHelp(t *testing.T) { clitest.Check(t, app) }
