// SPDX-License-Identifier: Apache-2.0

package events

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// SubflowRow is one subflow of the live view: the congestion control's
// state plus what is computed from the previous sample and what the path
// manager's events say about it.
type SubflowRow struct {
	stats.Subflow
	// Rate is the delivery rate since the previous sample, from the
	// bytes_acked delta (bytes per second); -1 for a subflow not seen
	// before.
	Rate float64 `json:"delivery_rate_bytes_per_second"`
	// LossRatio is lost / (lost + delivered) segments since the previous
	// sample; -1 when unknown.
	LossRatio float64 `json:"loss_ratio"`
	// Established is when the path manager reported the subflow (zero if
	// no event was seen for it).
	Established time.Time `json:"established,omitzero"`
}

// ConnRow is one connection of the live view (a plain TCP socket running
// a loaded CC is a connection of one subflow without a token).
type ConnRow struct {
	Token       string       `json:"token"` // 8 hex digits; "" for plain TCP
	CC          string       `json:"cc"`
	Algo        string       `json:"algo"`
	Subflows    []SubflowRow `json:"subflows"` // by kernel subflow id
	Cwnd        uint64       `json:"cwnd_segments"`
	MinSRTT     float64      `json:"min_srtt_seconds"`
	MaxSRTT     float64      `json:"max_srtt_seconds"`
	Rate        float64      `json:"delivery_rate_bytes_per_second"` // sum of the known subflow rates; -1 if none is known
	Lost        uint64       `json:"lost_segments"`
	Retrans     uint64       `json:"retrans_segments"`
	Coupled     float64      `json:"coupled"` // from the most recently updated subflow
	CoupledName string       `json:"coupled_name"`
	// CoupledPaths is how many subflows the algorithm coupled at the
	// most recently updated subflow's last window increase: 1 for a
	// connection of one subflow, which runs as its plain TCP equivalent.
	CoupledPaths uint32 `json:"coupled_paths"`
	// From the events (zero without them):
	Created    time.Time `json:"created,omitzero"`
	ServerSide bool      `json:"server_side"`
	// SubflowsSeen counts the subflows the events reported over the
	// connection's life, closed ones included.
	SubflowsSeen int `json:"subflows_seen"`
	// PathCtl is what a path controller (the daemon's, or `mptcp-cc
	// pathctl`) last decided for the connection; nil when none controls
	// it. Filled by JoinPathctl.
	PathCtl *pathctl.ConnState `json:"pathctl,omitempty"`
}

// Frame is one refresh of the live view.
type Frame struct {
	Time        time.Time         `json:"time"`
	Interval    float64           `json:"interval_seconds"` // since the previous sample; 0 for the first
	Connections []ConnRow         `json:"connections"`
	Subflows    int               `json:"subflows"`
	Closed      []Conn            `json:"recently_closed"`  // from the events, most recent first
	Events      map[string]uint64 `json:"events,omitempty"` // counts by type
	EventsSince time.Time         `json:"events_since,omitzero"`
	EventsNetns string            `json:"events_netns,omitempty"`
	// PathctlUnlisted are the connections a path controller holds that
	// have no row here (they run no mptcp-cc congestion control).
	PathctlUnlisted []pathctl.ConnState `json:"pathctl_unlisted,omitempty"`
	// Untracked counts, per congestion control, the subflows since its
	// load that found its subflows map full: they ran it, unseen here.
	Untracked map[string]uint64 `json:"untracked_subflows,omitempty"`
}

// JoinPathctl gives each connection of f what a path controller publishes
// about it (pathctl.ReadStates), by token; where two namespaces' controllers
// hold the same token, the one whose subflows are the row's wins. The
// controlled connections with no row go to f.PathctlUnlisted.
func (f *Frame) JoinPathctl(states []pathctl.State) {
	byToken := map[string][]pathctl.ConnState{}
	for _, s := range states {
		for _, c := range s.Connections {
			byToken[c.Token] = append(byToken[c.Token], c)
		}
	}
	used := map[*pathctl.ConnState]bool{}
	for i := range f.Connections {
		c := &f.Connections[i]
		c.PathCtl = nil
		cands := byToken[c.Token]
		if c.Token == "" || len(cands) == 0 {
			continue
		}
		pick := &cands[0]
		for j := range cands {
			if cands[j].Best != "" && c.SubflowOf(cands[j].Best) != nil {
				pick = &cands[j]
			}
		}
		used[pick] = true
		cp := *pick
		c.PathCtl = &cp
	}
	f.PathctlUnlisted = nil
	for _, cands := range byToken {
		for j := range cands {
			if !used[&cands[j]] {
				f.PathctlUnlisted = append(f.PathctlUnlisted, cands[j])
			}
		}
	}
	sort.Slice(f.PathctlUnlisted, func(i, j int) bool {
		a, b := f.PathctlUnlisted[i], f.PathctlUnlisted[j]
		return a.Token < b.Token || a.Token == b.Token && a.Netns < b.Netns
	})
}

// SubflowOf returns the connection's subflow named LOCAL->REMOTE (as
// pathctl names subflows), or nil.
func (c *ConnRow) SubflowOf(id string) *SubflowRow {
	for i := range c.Subflows {
		if s := &c.Subflows[i]; s.Local.String()+"->"+s.Remote.String() == id {
			return s
		}
	}
	return nil
}

type prevSample struct {
	acked, delivered, lost uint64
}

// Sampler turns successive map snapshots into frames with rates.
type Sampler struct {
	prev     map[uint64]prevSample
	prevTime time.Time
}

// Frame builds a frame from a snapshot of the maps (and, if st is not nil,
// the events).
func (s *Sampler) Frame(subs []stats.Subflow, st *State, now time.Time) Frame {
	f := Frame{Time: now, Connections: []ConnRow{}, Closed: []Conn{}}
	dt := 0.0
	if !s.prevTime.IsZero() {
		dt = now.Sub(s.prevTime).Seconds()
	}
	f.Interval = dt
	next := make(map[uint64]prevSample, len(subs))
	var evByToken map[uint32]*Conn
	if st != nil {
		evByToken = make(map[uint32]*Conn, len(st.Open)+len(st.Closed))
		for i := range st.Closed {
			evByToken[st.Closed[i].Token] = &st.Closed[i]
		}
		for i := range st.Open {
			evByToken[st.Open[i].Token] = &st.Open[i]
		}
		f.Closed = st.Closed
		f.Events = st.Counts
		f.EventsSince = st.Since
	}

	type key struct {
		cc    string
		token uint32
		id    uint64 // plain TCP: the subflow id, so each is its own row
	}
	idx := map[key]int{}
	seen := map[uint64]bool{}
	for _, sub := range subs {
		if seen[sub.ID] {
			continue
		}
		seen[sub.ID] = true
		f.Subflows++
		row := SubflowRow{Subflow: sub, Rate: -1, LossRatio: -1}
		cur := prevSample{acked: sub.BytesAcked, delivered: sub.Delivered, lost: sub.Lost}
		next[sub.ID] = cur
		if p, ok := s.prev[sub.ID]; ok && dt > 0 {
			if cur.acked >= p.acked {
				row.Rate = float64(cur.acked-p.acked) / dt
			}
			dl, dd := cur.lost-p.lost, cur.delivered-p.delivered
			if cur.lost >= p.lost && cur.delivered >= p.delivered && dl+dd > 0 {
				row.LossRatio = float64(dl) / float64(dl+dd)
			} else if dl+dd == 0 {
				row.LossRatio = 0
			}
		}
		k := key{cc: sub.CC, token: sub.Token}
		if !sub.MPTCP {
			k = key{cc: sub.CC, id: sub.ID}
		}
		i, ok := idx[k]
		if !ok {
			i = len(f.Connections)
			idx[k] = i
			c := ConnRow{CC: sub.CC, Algo: sub.Algo, CoupledName: sub.CoupledName, Rate: -1}
			if sub.MPTCP {
				c.Token = fmt.Sprintf("%08x", sub.Token)
				if ev := evByToken[sub.Token]; ev != nil {
					c.Created, c.ServerSide, c.SubflowsSeen = ev.Created, ev.ServerSide, len(ev.Subflows)
				}
			}
			f.Connections = append(f.Connections, c)
		}
		c := &f.Connections[i]
		if sub.MPTCP {
			if ev := evByToken[sub.Token]; ev != nil {
				if es, ok := ev.Subflow(sub.Local, sub.Remote); ok {
					row.Established = es.Established
				}
			}
		}
		c.Subflows = append(c.Subflows, row)
	}
	for i := range f.Connections {
		c := &f.Connections[i]
		sort.Slice(c.Subflows, func(a, b int) bool { return c.Subflows[a].SubflowID < c.Subflows[b].SubflowID })
		var newest uint64
		for j, r := range c.Subflows {
			c.Cwnd += uint64(r.Cwnd)
			srtt := r.SRTT.Seconds()
			if j == 0 || srtt < c.MinSRTT {
				c.MinSRTT = srtt
			}
			if srtt > c.MaxSRTT {
				c.MaxSRTT = srtt
			}
			if r.Rate >= 0 {
				if c.Rate < 0 {
					c.Rate = 0
				}
				c.Rate += r.Rate
			}
			c.Lost += r.Lost
			c.Retrans += r.Retrans
			if j == 0 || r.UpdatedNs > newest {
				newest, c.Coupled, c.CoupledPaths = r.UpdatedNs, r.Coupled, r.Paths
			}
		}
	}
	s.prev, s.prevTime = next, now
	SortConns(f.Connections, "token")
	return f
}

// SortKeys are the orders SortConns knows.
var SortKeys = []string{"cwnd", "srtt", "rate", "token"}

// SortConns orders connections: cwnd, rate and srtt largest first (srtt
// by the connection's slowest subflow), token ascending.
func SortConns(c []ConnRow, by string) error {
	var less func(a, b *ConnRow) bool
	switch by {
	case "cwnd":
		less = func(a, b *ConnRow) bool { return a.Cwnd > b.Cwnd }
	case "srtt":
		less = func(a, b *ConnRow) bool { return a.MaxSRTT > b.MaxSRTT }
	case "rate":
		less = func(a, b *ConnRow) bool { return a.Rate > b.Rate }
	case "token":
		less = func(a, b *ConnRow) bool { return false }
	default:
		return fmt.Errorf("unknown sort key %q: one of %s", by, strings.Join(SortKeys, ", "))
	}
	sort.SliceStable(c, func(i, j int) bool {
		a, b := &c[i], &c[j]
		if less(a, b) {
			return true
		}
		if less(b, a) {
			return false
		}
		if a.Token != b.Token {
			return a.Token < b.Token
		}
		if a.CC != b.CC {
			return a.CC < b.CC
		}
		return a.Subflows[0].ID < b.Subflows[0].ID
	})
	return nil
}
