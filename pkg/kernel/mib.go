// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MPTCPMIB reads the kernel's MPTCP MIB counters (the MPTcpExt lines of
// netstat, what `nstat -a` shows as MPTcpExt*) in network namespace ns
// ("" for the caller's own), by name without the prefix. The file is read
// through /proc/thread-self: /proc/net follows the process's namespace,
// while a namespace switch (netns.Do) moves only the calling thread.
func MPTCPMIB(ns string) (map[string]uint64, error) {
	return netstatGroup(ns, "MPTcpExt:", "MPTCP MIB")
}

// MPTCPAnomalies are the MPTCP MIB counters that say something went wrong
// with a connection's data or its mapping, rather than count routine work:
// where one moved, the kernel's MPTCP saw the fault documented in
// docs/kernel-faults.md or one like it.
var MPTCPAnomalies = []string{
	"DSSNotMatching", "DSSNoMatchTCP", "DSSCorruptionFallback", "DSSCorruptionReset",
	"DataCsumErr", "NoDSSInWindow", "InfiniteMapTx", "InfiniteMapRx", "MPFailTx", "MPFailRx",
	"MPRstTx", "MPRstRx", "DssFallback", "MPCapableDataFallback", "MPCapableFallbackACK",
	"MPCapableFallbackSYNACK", "FallbackFailed",
}

// TCPExtMIB reads the kernel's TcpExt counters (`nstat -a`'s TcpExt*: loss
// recoveries, undos, retransmissions) in network namespace ns, as MPTCPMIB
// does.
func TCPExtMIB(ns string) (map[string]uint64, error) {
	return netstatGroup(ns, "TcpExt:", "TcpExt MIB")
}

func netstatGroup(ns, group, what string) (map[string]uint64, error) {
	var out map[string]uint64
	err := inNetns(ns, func(dir string) error {
		f, err := os.Open(filepath.Join(dir, "proc/thread-self/net/netstat"))
		if err != nil {
			return err
		}
		defer f.Close()
		out, err = parseNetstat(f, group)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the %s counters: %w", what, err)
	}
	return out, nil
}

// parseMPTCPMIB parses the MPTcpExt group of netstat's format.
func parseMPTCPMIB(r io.Reader) (map[string]uint64, error) { return parseNetstat(r, "MPTcpExt:") }

// parseNetstat parses one group of netstat's format: per group a line of
// names and a line of values, each starting with the group's name.
func parseNetstat(r io.Reader, group string) (map[string]uint64, error) {
	var names []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != group {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		if len(f)-1 != len(names) {
			return nil, fmt.Errorf("%s has %d names and %d values", group, len(names), len(f)-1)
		}
		out := make(map[string]uint64, len(names))
		for i, v := range f[1:] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", group, names[i], err)
			}
			out[names[i]] = n
		}
		return out, nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if group == "MPTcpExt:" {
		return nil, fmt.Errorf("no %s counters (a kernel without MPTCP)", group)
	}
	return nil, fmt.Errorf("no %s counters in netstat", group)
}

// MIBDelta is what moved between two reads of a MIB group: the counters
// whose value changed, by how much.
func MIBDelta(before, after map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
