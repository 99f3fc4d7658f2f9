// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
)

// Both sides fed invalid values: exit 2 for a wrong command line, 1 for a
// value refused, a message naming the flag and what it wants, nothing left.
func TestBadInput(t *testing.T) {
	bin := testenv.Binary(t, ".")
	noNS := testenv.Unique("mptcp-xfer-none-")
	bad := testkernel.Bad
	testkernel.CheckBadArgs(t, bin, testkernel.PinRoot(t), nil, []testkernel.BadArgs{
		bad(2, []string{"serve"}, `unknown command "serve"`),
		bad(2, []string{"server"}, "want --listen ADDR:PORT"),
		bad(2, []string{"server", "--listen", "127.0.0.1:0", "--verbose"}, "flag provided but not defined: --verbose"),
		bad(1, []string{"server", "--listen", "10.0.0.1"}, `--listen "10.0.0.1"`, "want ADDR:PORT"),
		bad(1, []string{"server", "--listen", "127.0.0.1:99999"}, `--listen "127.0.0.1:99999"`, "0 to 65535"),
		bad(1, []string{"server", "--listen", "nonsense:80"}, `--listen "nonsense:80"`),
		bad(1, []string{"server", "--listen", "127.0.0.1:0", "--ns", noNS}, noNS, "does not exist", "ip netns list"),
		bad(1, []string{"server", "--listen", "127.0.0.1:0", "--ns", "../x"}, `"../x"`, "no '/'"),

		bad(2, []string{"client"}, "want --connect ADDR:PORT and one of --bytes or --time"),
		bad(2, []string{"client", "--connect", "127.0.0.1:9"}, "one of --bytes or --time"),
		bad(2, []string{"client", "--connect", "127.0.0.1:9", "--bytes", "1MB", "--time", "1s"}, "one of --bytes or --time"),
		bad(2, []string{"client", "--connect", "127.0.0.1:9", "--time", "abc"}, `invalid value "abc" for flag --time`),
		bad(1, []string{"client", "--connect", "127.0.0.1:9", "--time", "-1s"}, "--time -1s", "positive"),
		bad(1, []string{"client", "--connect", "127.0.0.1:9", "--bytes", "-5"}, `--bytes "-5"`, "positive size"),
		bad(1, []string{"client", "--connect", "127.0.0.1:9", "--bytes", "lots"}, `--bytes "lots"`),
		bad(1, []string{"client", "--connect", "nonsense", "--time", "1s"}, `--connect "nonsense"`, "want ADDR:PORT"),
		bad(1, []string{"client", "--connect", "127.0.0.1:70000", "--time", "1s"}, "0 to 65535"),
		bad(1, []string{"client", "--connect", "127.0.0.1:9", "--time", "1s", "--bind", "1.2.3"}, `--bind "1.2.3"`),
		bad(1, []string{"client", "--connect", "127.0.0.1:9", "--time", "1s", "--cc", "much_too_long_a_name"}, `--cc "much_too_long_a_name" is not a registered`),
		bad(1, []string{"client", "--connect", "127.0.0.1:9", "--time", "1s", "--ns", noNS}, noNS, "does not exist"),
	})
}
