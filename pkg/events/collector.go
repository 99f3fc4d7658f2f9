// SPDX-License-Identifier: Apache-2.0

package events

import (
	"sync"

	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
)

// KnownTypes are the event types whose counts the metrics export from
// zero, not from the first event of the type.
var KnownTypes = []mptcpnl.EventType{
	mptcpnl.EventCreated, mptcpnl.EventEstablished, mptcpnl.EventClosed,
	mptcpnl.EventAnnounced, mptcpnl.EventRemoved,
	mptcpnl.EventSubEstablished, mptcpnl.EventSubClosed, mptcpnl.EventSubPriority,
	mptcpnl.EventListenerCreated, mptcpnl.EventListenerClosed,
}

// Collector holds the trackers whose counts the metrics export
// (pkg/metrics reads them at each scrape), one tracker per network
// namespace ("" names the daemon's own, exported as netns="host").
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

// Each calls fn with every tracker and its namespace name, with Add and
// Remove held off until it returns.
func (c *Collector) Each(fn func(netns string, t *Tracker)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ns, t := range c.trackers {
		fn(ns, t)
	}
}
