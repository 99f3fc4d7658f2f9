// SPDX-License-Identifier: Apache-2.0

package pathctl

// What the engine takes and gives: a connection's subflows at one moment
// (Sample, filled by run.go from sock_diag, or by tests from recorded
// series) and what the connection should look like (Decision, applied by
// run.go through mptcp_pm). Apart from the engine so that its two users
// read the contract without the rule.

import (
	"net/netip"
	"time"
)

// Mode is how a connection's data is spread.
type Mode int

const (
	Multipath Mode = iota // every subflow carries data
	BestPath              // one subflow; the others are backup
)

func (m Mode) String() string {
	if m == BestPath {
		return "best-path"
	}
	return "multipath"
}

// SubflowID names a subflow by its addresses.
type SubflowID struct{ Local, Remote netip.AddrPort }

func (s SubflowID) String() string { return s.Local.String() + "->" + s.Remote.String() }

// SubflowSample is one subflow at one moment.
type SubflowSample struct {
	ID           SubflowID
	DeliveryRate uint64 // bytes/s, tcpi_delivery_rate
	BytesAcked   uint64 // cumulative, tcpi_bytes_acked
	NotSent      uint32 // bytes queued on it, not yet sent (tcpi_notsent_bytes)
	Unacked      uint32 // packets in flight (tcpi_unacked)
	SRTT         time.Duration
	Backup       bool // flagged backup, as the kernel reports it
}

// Sample is a connection at one moment.
type Sample struct {
	At       time.Time
	Subflows []SubflowSample
}

// Decision is what the connection should look like now.
type Decision struct {
	Mode     Mode
	Best     SubflowID   // the subflow kept in best-path mode
	Backup   []SubflowID // subflows to flag backup; every other one is cleared
	Switched bool        // Mode or Best changed at this step, or subflows are reset
	Trial    bool        // the mode is on trial (not yet chosen)
	Chosen   bool        // a trial ended at this step: Mode is the choice
	Reset    []SubflowID // subflows to close and open again (Config.ResetStalled)
	// Peek is a backup subflow to peek at: clear its flag for a moment,
	// set it again, and tell the engine what it delivered (Engine.Peeked).
	Peek   SubflowID
	Reason string // why it switched (or why it holds)
}
