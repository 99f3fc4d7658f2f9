// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// MIBCounters are the kernel's MPTCP MIB counters (netstat's MPTcpExt)
// the exporter reads, with what each tells an operator: data damage and
// the fallbacks that follow it, reinjection and reordering, joins, and
// the MP_PRIO signals the path controller sends. docs/metrics.md renders
// this table; a counter the running kernel lacks is left out.
var MIBCounters = []struct{ Name, Means string }{
	{"DataCsumErr", "data checksum failures (DSS checksums on: net.mptcp.checksum_enabled)"},
	{"DSSNotMatching", "DSS mappings that did not match the subflow's data"},
	{"DSSCorruptionFallback", "connections that fell back to TCP after data corruption"},
	{"DSSCorruptionReset", "subflows reset after data corruption"},
	{"MPCapableFallbackACK", "server-side fallbacks to TCP: no MP_CAPABLE in the third ACK"},
	{"MPCapableFallbackSYNACK", "client-side fallbacks to TCP: no MP_CAPABLE in the SYN/ACK"},
	{"MPFallbackTokenInit", "fallbacks to TCP: no token could be allocated"},
	{"MPTCPRetrans", "data segments reinjected on another subflow"},
	{"DuplicateData", "data received twice"},
	{"OFOQueue", "data queued out of order at the MPTCP level"},
	{"OFOQueueTail", "out-of-order data added at the tail of that queue"},
	{"OFOMerge", "out-of-order data merged with queued data"},
	{"MPJoinSynTx", "MP_JOIN SYNs sent"},
	{"MPJoinSynRx", "MP_JOIN SYNs received"},
	{"MPJoinAckRx", "MP_JOIN third ACKs received (joins completed, server side)"},
	{"MPJoinRejected", "MP_JOINs rejected (subflow limit, path manager)"},
	{"MPJoinNoTokenFound", "MP_JOINs for an unknown connection"},
	{"MPPrioTx", "MP_PRIO sent (a subflow's backup flag changed here)"},
	{"MPPrioRx", "MP_PRIO received"},
	{"MPFailTx", "MP_FAIL sent"},
	{"MPFailRx", "MP_FAIL received"},
	{"MPRstTx", "MP_TCPRST sent"},
	{"MPRstRx", "MP_TCPRST received"},
	{"SubflowStale", "subflows marked stale (no progress)"},
	{"SubflowRecover", "stale subflows that recovered"},
}

// KernelMIB exports MIBCounters of a set of network namespaces ("" is
// the exporter's own, labelled host), read at every scrape. A namespace
// that cannot be read is left out and logged once until it can be read
// again. Safe for concurrent use.
type KernelMIB struct {
	Logger *slog.Logger

	mu     sync.Mutex
	nss    []string
	failed map[string]bool
}

// SetNamespaces sets the namespaces the next scrapes read.
func (k *KernelMIB) SetNamespaces(nss []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.nss = append([]string(nil), nss...)
}

// Describe implements prometheus.Collector.
func (k *KernelMIB) Describe(ch chan<- *prometheus.Desc) { describe(ch, mibFamilies) }

// Collect implements prometheus.Collector.
func (k *KernelMIB) Collect(ch chan<- prometheus.Metric) {
	k.mu.Lock()
	nss := k.nss
	k.mu.Unlock()
	for _, n := range nss {
		m, err := kernel.MPTCPMIB(n)
		k.report(n, err)
		if err != nil {
			continue
		}
		for _, f := range mibFamilies {
			f.mib(emitter{chanSink(ch), f}, nsLabel(n), m)
		}
	}
}

func (k *KernelMIB) report(n string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.failed == nil {
		k.failed = map[string]bool{}
	}
	if err == nil {
		delete(k.failed, n)
		return
	}
	if !k.failed[n] && k.Logger != nil {
		k.Logger.Warn("cannot read a namespace's MPTCP MIB counters; left out of the metrics", "netns", n, "err", err)
	}
	k.failed[n] = true
}
