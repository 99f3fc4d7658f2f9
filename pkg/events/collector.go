// SPDX-License-Identifier: Apache-2.0

package events

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
)

var (
	descEvents = prometheus.NewDesc("mptcp_cc_pm_events_total",
		"mptcp_pm netlink events received, by network namespace and event type.", []string{"netns", "type"}, nil)
	descOpen = prometheus.NewDesc("mptcp_cc_pm_connections",
		"Open MPTCP connections the path manager's events reported (those created before the daemon subscribed are counted once one of their events arrives).", []string{"netns"}, nil)
	descOverruns = prometheus.NewDesc("mptcp_cc_pm_event_overruns_total",
		"Times the kernel dropped mptcp_pm events because the daemon's receive buffer was full.", []string{"netns"}, nil)
)

var knownTypes = []mptcpnl.EventType{
	mptcpnl.EventCreated, mptcpnl.EventEstablished, mptcpnl.EventClosed,
	mptcpnl.EventAnnounced, mptcpnl.EventRemoved,
	mptcpnl.EventSubEstablished, mptcpnl.EventSubClosed, mptcpnl.EventSubPriority,
	mptcpnl.EventListenerCreated, mptcpnl.EventListenerClosed,
}

// Collector exports the trackers' counts, one tracker per network namespace
// ("" names the daemon's own, exported as netns="host").
type Collector struct {
	mu       sync.Mutex
	trackers map[string]*Tracker
}

// Add exports a tracker under a namespace name.
func (c *Collector) Add(netns string, t *Tracker) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trackers == nil {
		c.trackers = map[string]*Tracker{}
	}
	c.trackers[netns] = t
}

// Remove stops exporting a namespace's tracker (the daemon no longer follows
// it, so its counts would only go stale).
func (c *Collector) Remove(netns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.trackers, netns)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descEvents
	ch <- descOpen
	ch <- descOverruns
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ns, t := range c.trackers {
		label := ns
		if label == "" {
			label = "host"
		}
		counts := t.Counts()
		byName := map[string]uint64{}
		for _, k := range knownTypes { // exported from zero, not from the first event
			byName[k.String()] = 0
		}
		for k, v := range counts {
			byName[k.String()] = v
		}
		types := make([]string, 0, len(byName))
		for k := range byName {
			types = append(types, k)
		}
		sort.Strings(types)
		for _, typ := range types {
			ch <- prometheus.MustNewConstMetric(descEvents, prometheus.CounterValue, float64(byName[typ]), label, typ)
		}
		ch <- prometheus.MustNewConstMetric(descOpen, prometheus.GaugeValue, float64(t.OpenCount()), label)
		ch <- prometheus.MustNewConstMetric(descOverruns, prometheus.CounterValue, float64(t.Overruns()), label)
	}
}
