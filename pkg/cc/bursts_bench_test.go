// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/lab/blocking"
	"github.com/mptcp-cc/mptcp-cc/lab/linkem"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
)

// TestBenchFairnessBursts looks at how the fairness matrix's senders put
// their packets on the wire and who loses them (docs/results/fairness.md,
// "A capture at the sender"): a capture in the client's namespace of
// every data packet it sends and every ACK it gets during the 15 s
// window (and one in the server's, of the data arriving and the ACKs
// leaving), for the same cells as TestBenchFairness (FAIRNESS, same syntax;
// default: 1 ms, 100 packets, 2 subflows, reno and lia, 1 run). For the
// MPTCP connection (its subflows together, as the bottleneck sees them)
// and the TCP flow, two tables:
//
//   - runs: how many segments left in runs (segments of the same sender
//     less than burstGap apart), and how often one was lost (its sequence
//     sent again later) by the length of the run it left in. A drop-tail
//     queue punishes long runs.
//   - congestion events (losses less than eventGap apart): in how many
//     each sender lost, how late each answered an ACK with its next
//     segment, and (a second capture, in the server's namespace) how long
//     the server held data before acknowledging it. At one drop-tail
//     queue, the sender hit in more events backs off more often. Then
//     what the emulated bottleneck saw (linkem.Path.ObserveForward): each
//     sender's share of the packets offered and of the drops, of the queue
//     at arrivals and at drops, and its drops by position in its arrival
//     runs. Each flow's own offered and dropped packets go to the log.
func TestBenchFairnessBursts(t *testing.T) {
	testenv.Bench(t)
	spec := os.Getenv("FAIRNESS")
	if spec == "" {
		spec = "rtt=1 queue=100p subflows=2 cc=reno,lia runs=1"
	}
	m := parseMatrix(t, spec)
	names := m.load(t)
	var runs, events strings.Builder
	fmt.Fprintf(&runs, "| base RTT | queue | subflows | cc | run | MPTCP/TCP | sender | segments | in runs of 1 / 2-3 / 4-7 / 8-15 / 16+ | longest run | lost per 1000, all | in runs of 1-3 / 4-7 / 8+ |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&events, "| base RTT | queue | subflows | cc | run | MPTCP/TCP | events | TCP flow lost only | MPTCP lost only | both | two subflows lost | lost per event TCP / MPTCP | ACK to next segment p90, TCP / MPTCP | ACKs answered after 100 us, TCP / MPTCP | sends no ACK released, TCP / MPTCP | segments lost (capture) / dropped by the bottleneck | server's ACK delay p50 / p90 / p99 / mean, TCP | MPTCP | ACKs after more than 1 ms, TCP / MPTCP | at the bottleneck: MPTCP's share of data packets offered / dropped | MPTCP's share of the queue, at arrivals / at drops | drops after the other sender took the room, TCP / MPTCP | MPTCP's share of packets taking the last room | TCP: arrivals following its own within 100 us (dropped per 1000, first / following) | MPTCP: the same | packets under 1400 bytes, TCP / MPTCP |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	m.each(t, func(c cell, n *topo.Net) {
		for _, algo := range append([]string{"1sf"}, m.ccs...) {
			for r := 1; r <= m.runs; r++ {
				res := captureRun(t, n, c.subflows, c.queueBytes, algo, names, m.refs[0])
				row := fmt.Sprintf("| %s | %s | %d | %s | %d | %.2f ", c.name(), c.queue.name, c.subflows, algo, r, res.ratio)
				fmt.Fprintf(&runs, "%s| MPTCP %s\n%s| TCP %s\n", row, res.mp, row, res.tcp)
				e := res.events
				fmt.Fprintf(&events, "%s| %d | %d | %d | %d | %d | %.1f / %.1f | %v / %v | %.0f%% / %.0f%% | %.1f%% / %.1f%% | %d / %d | %v / %v / %v / %v | %v / %v / %v / %v | %.1f%% / %.1f%% | %s |\n", row,
					e.events, e.tcpOnly, e.mpOnly, e.both, e.mpTwo, e.perEvent(false), e.perEvent(true),
					res.tcpLag.p90.Round(time.Microsecond), res.mpLag.p90.Round(time.Microsecond), 100*res.tcpLag.over100us, 100*res.mpLag.over100us,
					100*res.tcpLag.unclocked, 100*res.mpLag.unclocked, e.tcpLost+e.mpLost, res.linkDrops,
					res.tcpAck.p50.Round(time.Microsecond), res.tcpAck.p90.Round(time.Microsecond), res.tcpAck.p99.Round(time.Microsecond), res.tcpAck.mean.Round(time.Microsecond),
					res.mpAck.p50.Round(time.Microsecond), res.mpAck.p90.Round(time.Microsecond), res.mpAck.p99.Round(time.Microsecond), res.mpAck.mean.Round(time.Microsecond),
					100*res.tcpAck.over1ms, 100*res.mpAck.over1ms, res.queue)
			}
		}
	})
	t.Logf("\n%s\n%s", runs.String(), events.String())
}

// delays is, per sender, how long the server held the newest segment an
// ACK covered before sending that ACK.
func (l *flowLog) delays() (mp, tcp ackDelays) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d [2][]time.Duration
	for _, f := range l.flows {
		k := f.sender()
		j := 0
		for _, a := range f.acks {
			// the newest segment this ACK covers that arrived before it
			last := -1
			for j < len(f.data) && !f.data[j].at.After(a.at) {
				if s := f.data[j]; int32(s.seq+uint32(s.len)-a.ack) <= 0 {
					last = j
				}
				j++
			}
			if last >= 0 {
				d[k] = append(d[k], a.at.Sub(f.data[last].at))
			}
		}
	}
	return newAckDelays(d[mptcpSender]), newAckDelays(d[tcpSender])
}

type ackDelays struct {
	n                   int
	p50, p90, p99, mean time.Duration
	over1ms             float64 // share of ACKs sent more than 1 ms after the data: a timer, not the arrival, sent them
}

func newAckDelays(d []time.Duration) ackDelays {
	if len(d) == 0 {
		return ackDelays{}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	slow := 0
	var sum time.Duration
	for _, x := range d {
		sum += x
		if x > time.Millisecond {
			slow++
		}
	}
	return ackDelays{len(d), d[len(d)/2], d[(len(d)-1)*9/10], d[(len(d)-1)*99/100], sum / time.Duration(len(d)), float64(slow) / float64(len(d))}
}

type captureResult struct {
	ratio         float64 // MPTCP/TCP throughput
	mp, tcp       burstStats
	events        lossEvents
	mpLag, tcpLag lagStats
	// what the emulated bottleneck dropped in the window (-1: a shaped
	// veth, no count), to set against the segments the capture saw lost
	linkDrops int64
	// how long the server held data before acknowledging it
	mpAck, tcpAck ackDelays
	queue         queueStats // at the emulated bottleneck (zero if a shaped veth)
}

// captureRun runs one fairness contest with the client's packets captured.
func captureRun(t *testing.T, n *topo.Net, nsub int, queueBytes uint32, c string, names map[string]string, ref string) captureResult {
	if ctl, ok := controls[c]; ok && !ctl.mptcp {
		t.Fatalf("FAIRNESS cc=%s: the capture tells the senders apart by MPTCP, and this arm has none", c)
	}
	flows, single := arm(c, nsub, names)
	flows = append(flows, flow{path: 0, cc: ref})
	log := newFlowLog(false)
	acks := newFlowLog(true)
	var capt, scapt *blocking.Capture
	link := n.Bottleneck(0)
	var drops0 linkem.Counters
	linkDrops := int64(-1)
	qt := &queueTrace{limit: int(queueBytes), mptcp: map[sendKey]bool{}, last: -1,
		flowOffered: map[sendKey]int{}, flowDropped: map[sendKey]int{}}
	snap := func(end bool) {
		if !end {
			if link != nil {
				drops0, _ = link.Stats()
				link.ObserveForward(qt.offer)
			}
			var err error
			if capt, err = blocking.StartCapture(n.Client, log); err != nil {
				t.Fatal(err)
			}
			if scapt, err = blocking.StartCapture(n.Server, acks); err != nil {
				t.Fatal(err)
			}
			return
		}
		if _, err := scapt.Stop(); err != nil {
			t.Fatal(err)
		}
		if link != nil {
			link.ObserveForward(nil)
			c, _ := link.Stats()
			linkDrops = int64(c.DroppedQueue + c.DroppedLoss + c.DroppedError - drops0.DroppedQueue - drops0.DroppedLoss - drops0.DroppedError)
		}
		st, err := capt.Stop()
		if err != nil {
			t.Fatal(err)
		}
		if st.Drops > 0 {
			t.Logf("the capture dropped %d of %d packets", st.Drops, st.Packets+st.Drops)
		}
	}
	restore := singleSubflow(t, n, single)
	m := &meter{t: t}
	mbps := m.run(n, flows, 8*time.Second, 15*time.Second, snap)
	restore()
	r := captureResult{ratio: share(mbps), linkDrops: linkDrops}
	r.mp, r.tcp, r.events = log.stats()
	r.mpLag, r.tcpLag = log.lags()
	r.mpAck, r.tcpAck = acks.delays()
	r.queue = qt.stats()
	t.Logf("%s: at the bottleneck, per flow: %s", c, qt.perFlow())
	return r
}

// burstGap: packets of one sender closer than this left back to back (one
// call into the sender's transmit loop); at 20 Mbit/s the bottleneck takes
// 600 us per packet, and an ACK-clocked sender's ACKs come about that far
// apart.
const burstGap = 100 * time.Microsecond

type sendKey struct{ src, dst netip.AddrPort }

// flowLog is a blocking.Sink keeping, per TCP flow (or MPTCP subflow)
// from the client to the server, its data segments and the ACKs that
// advanced its acknowledged sequence, in the order the capture saw them:
// in the client's namespace the data leaves and the ACKs arrive, in the
// server's the other way round (dataInbound).
type flowLog struct {
	dataInbound bool
	mu          sync.Mutex
	flows       map[sendKey]*flowSeen
}

type flowSeen struct {
	mptcp   bool
	data    []sent
	acks    []ackSeen
	high    uint32 // highest acknowledgment seen
	started bool
}

type sent struct {
	at  time.Time
	seq uint32
	len int
}

type ackSeen struct {
	at  time.Time
	ack uint32
}

// The two senders, as every per-sender array here indexes them.
const (
	tcpSender   = 0
	mptcpSender = 1
)

// sender is the index of the sender a flow belongs to.
func (f *flowSeen) sender() int {
	if f.mptcp {
		return mptcpSender
	}
	return tcpSender
}

func newFlowLog(dataInbound bool) *flowLog {
	return &flowLog{dataInbound: dataInbound, flows: map[sendKey]*flowSeen{}}
}

func (l *flowLog) Add(p blocking.Packet, at time.Time, inbound bool) {
	if p.SYN {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if inbound != l.dataInbound {
		// An ACK, for the flow the other way.
		f := l.flows[sendKey{p.Dst, p.Src}]
		if f != nil && p.ACK && p.PayloadLen == 0 && (!f.started || int32(p.AckSeq-f.high) > 0) {
			f.high, f.started = p.AckSeq, true
			f.acks = append(f.acks, ackSeen{at, p.AckSeq})
		}
		return
	}
	if p.PayloadLen == 0 {
		return
	}
	k := sendKey{p.Src, p.Dst}
	f := l.flows[k]
	if f == nil {
		f = &flowSeen{}
		l.flows[k] = f
	}
	f.mptcp = f.mptcp || p.Map
	f.data = append(f.data, sent{at, p.Seq, p.PayloadLen})
}

// burstStats is one sender's (all the MPTCP subflows, or the TCP flow)
// segments by the length of the run they left in, and which were lost.
type burstStats struct {
	segments int
	inRun    [5]int // packets in runs of 1, 2-3, 4-7, 8-15, 16+
	longest  int
	lost     [3]int // originals lost, in runs of 1-3, 4-7, 8+
	orig     [3]int // originals sent, same buckets
}

func runBucket(n int) int {
	switch {
	case n == 1:
		return 0
	case n < 4:
		return 1
	case n < 8:
		return 2
	case n < 16:
		return 3
	}
	return 4
}

func lossBucket(n int) int {
	switch {
	case n < 4:
		return 0
	case n < 8:
		return 1
	}
	return 2
}

func (s burstStats) String() string {
	share := func(k int) string { return fmt.Sprintf("%.0f%%", 100*float64(k)/float64(max(s.segments, 1))) }
	per1000 := func(l, o int) string {
		if o == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", 1000*float64(l)/float64(o))
	}
	var lost, orig int
	for i := range s.lost {
		lost += s.lost[i]
		orig += s.orig[i]
	}
	return fmt.Sprintf("| %d | %s / %s / %s / %s / %s | %d | %s | %s / %s / %s |", s.segments,
		share(s.inRun[0]), share(s.inRun[1]), share(s.inRun[2]), share(s.inRun[3]), share(s.inRun[4]), s.longest,
		per1000(lost, orig), per1000(s.lost[0], s.orig[0]), per1000(s.lost[1], s.orig[1]), per1000(s.lost[2], s.orig[2]))
}

// stats splits the log into the MPTCP connection's subflows (merged in time
// order: the bottleneck sees one sender) and the TCP flow. A packet is lost
// if its flow sent its first byte again later: the kernel's MIBs counted no
// spurious retransmission in these runs (docs/results/fairness.md).
func (l *flowLog) stats() (mp, tcp burstStats, ev lossEvents) {
	l.mu.Lock()
	defer l.mu.Unlock()
	type pkt struct {
		at   time.Time
		lost bool
		orig bool
		flow int // index of its flow (subflow)
	}
	var pkts [2][]pkt // by sender
	var lost []lostAt
	flow := 0
	for _, f := range l.flows {
		flow++
		// The veths offload segmentation (as a host's NIC would), so a
		// captured packet may be several segments: it is cut into its
		// segments of the flow's MSS (its commonest packet length), which
		// leave at once.
		count := map[int]int{}
		for _, s := range f.data {
			count[s.len]++
		}
		mss := 0
		for l, n := range count {
			if l <= 1460 && (mss == 0 || n > count[mss]) {
				mss = l
			}
		}
		// An original segment starts at or past the highest byte sent
		// before it; a segment starting below is sent again, and the
		// original it repeats was lost.
		type seg struct {
			at   time.Time
			seq  uint32
			orig bool
		}
		var segs []seg
		resent := map[uint32]bool{}
		high := f.data[0].seq
		for _, s := range f.data {
			for off := 0; off < s.len; off += mss {
				q := s.seq + uint32(off)
				o := int32(q-high) >= 0
				if !o {
					resent[q] = true
				}
				segs = append(segs, seg{s.at, q, o})
			}
			if end := s.seq + uint32(s.len); int32(end-high) > 0 {
				high = end
			}
		}
		for _, sg := range segs {
			p := pkt{at: sg.at, orig: sg.orig, lost: sg.orig && resent[sg.seq], flow: flow}
			if p.lost {
				lost = append(lost, lostAt{sg.at, flow, f.mptcp})
			}
			pkts[f.sender()] = append(pkts[f.sender()], p)
		}
	}
	tally := func(ps []pkt) (s burstStats) {
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].at.Before(ps[j].at) })
		for i := 0; i < len(ps); {
			j := i + 1
			for j < len(ps) && ps[j].at.Sub(ps[j-1].at) < burstGap {
				j++
			}
			n := j - i
			s.segments += n
			s.inRun[runBucket(n)] += n
			s.longest = max(s.longest, n)
			for _, p := range ps[i:j] {
				if p.orig {
					s.orig[lossBucket(n)]++
					if p.lost {
						s.lost[lossBucket(n)]++
					}
				}
			}
			i = j
		}
		return s
	}
	return tally(pkts[mptcpSender]), tally(pkts[tcpSender]), groupLosses(lost)
}

type lostAt struct {
	at    time.Time
	flow  int
	mptcp bool
}

// eventGap: losses closer than this belong to one congestion event (one
// overflow of the queue, before the senders' reductions drain it: a
// 100-packet queue at 20 Mbit/s is 60 ms).
const eventGap = 50 * time.Millisecond

// lossEvents is who lost in each congestion event.
type lossEvents struct {
	events, tcpOnly, mpOnly, both int
	mpTwo                         int // events in which two or more subflows lost
	tcpLost, mpLost               int // lost segments
}

// perEvent is the segments a sender lost per event it lost in.
func (e lossEvents) perEvent(mptcp bool) float64 {
	if mptcp {
		return float64(e.mpLost) / float64(max(e.mpOnly+e.both, 1))
	}
	return float64(e.tcpLost) / float64(max(e.tcpOnly+e.both, 1))
}

func groupLosses(lost []lostAt) (e lossEvents) {
	sort.Slice(lost, func(i, j int) bool { return lost[i].at.Before(lost[j].at) })
	for i := 0; i < len(lost); {
		j := i + 1
		for j < len(lost) && lost[j].at.Sub(lost[j-1].at) < eventGap {
			j++
		}
		tcp, sub := false, map[int]bool{}
		for _, l := range lost[i:j] {
			if l.mptcp {
				sub[l.flow] = true
				e.mpLost++
			} else {
				tcp = true
				e.tcpLost++
			}
		}
		e.events++
		switch {
		case tcp && len(sub) > 0:
			e.both++
		case tcp:
			e.tcpOnly++
		default:
			e.mpOnly++
		}
		if len(sub) >= 2 {
			e.mpTwo++
		}
		i = j
	}
	return e
}

// lags is, per sender, how long after an ACK that advanced its
// acknowledged sequence it sent its next segment (ACKs followed by
// nothing within 5 ms - a window not yet open - left out): an ACK-clocked
// sender answers at once; one whose data waits for something else (a
// layer above pushing it) answers late, and at a full drop-tail queue the
// late arrival is the one dropped.
func (l *flowLog) lags() (mp, tcp lagStats) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lags [2][]time.Duration // by sender
	var unclocked, sends [2]int
	for _, f := range l.flows {
		k := f.sender()
		j := 0
		for _, a := range f.acks {
			for j < len(f.data) && f.data[j].at.Before(a.at) {
				j++
			}
			if j == len(f.data) {
				break
			}
			if d := f.data[j].at.Sub(a.at); d < 5*time.Millisecond {
				lags[k] = append(lags[k], d)
			}
		}
		// A send is clocked if an ACK of its flow came at most clockGap
		// before it, or it continues a run of its flow's sends; else
		// something other than an ACK released it.
		a := 0
		for i, snd := range f.data {
			for a < len(f.acks) && !f.acks[a].at.After(snd.at) {
				a++
			}
			sends[k]++
			acked := a > 0 && snd.at.Sub(f.acks[a-1].at) <= clockGap
			inRun := i > 0 && snd.at.Sub(f.data[i-1].at) < burstGap
			if !acked && !inRun {
				unclocked[k]++
			}
		}
	}
	tcp, mp = newLagStats(lags[tcpSender]), newLagStats(lags[mptcpSender])
	tcp.unclocked = float64(unclocked[tcpSender]) / float64(max(sends[tcpSender], 1))
	mp.unclocked = float64(unclocked[mptcpSender]) / float64(max(sends[mptcpSender], 1))
	return mp, tcp
}

// clockGap: a send this soon after an ACK of its flow was released by it
// (the ACK-to-send lags above: p90 20-40 us).
const clockGap = 200 * time.Microsecond

type lagStats struct {
	p90       time.Duration
	over100us float64 // share of the ACKs answered later than 100 us
	unclocked float64 // share of the sends no ACK released (clockGap)
}

func newLagStats(d []time.Duration) lagStats {
	if len(d) == 0 {
		return lagStats{}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	late := 0
	for _, x := range d {
		if x > 100*time.Microsecond {
			late++
		}
	}
	return lagStats{p90: d[(len(d)-1)*9/10], over100us: float64(late) / float64(len(d))}
}

// queueTrace watches the emulated bottleneck's queue (a linkem.Observer):
// each data packet offered, by sender, and for each drop what the queue
// held and who took the slot before it.
type queueTrace struct {
	mu    sync.Mutex
	limit int              // the queue's limit, bytes
	mptcp map[sendKey]bool // flows seen with a DSS mapping
	q     []queuedPkt      // accepted, not yet sent on, in order
	bytes [2]int           // queued bytes by sender: [0] TCP, [1] MPTCP
	last  int              // sender of the last accepted packet (-1: none yet)
	prev  [2]time.Time     // each sender's last arrival
	st    queueStats
	// per flow (subflow): data packets offered and dropped
	flowOffered, flowDropped map[sendKey]int
}

type queuedPkt struct {
	depart time.Time
	who    int
	size   int
}

// queueStats is, by sender ([0] the TCP flow, [1] the MPTCP subflows):
// data packets offered, dropped, and dropped right after the same sender
// or the other one took the last free room; the MPTCP share of the queued
// bytes, summed over arrivals and over drops.
type queueStats struct {
	offered, dropped       [2]int
	afterSame, afterOther  [2]int
	mpShareSum, mpShareDrp float64
	nearFull               [2]int // packets accepted with less than two packets' room left after them
	// by position in the sender's arrival run (packets less than
	// burstGap after the same sender's previous): [sender][first, later]
	posOffered, posDropped [2][2]int
	small                  [2]int // data packets offered shorter than 1400 bytes
}

func (q *queueTrace) offer(at time.Time, pkt []byte, accepted bool, depart time.Time) {
	p, err := blocking.ParsePacket(pkt)
	if err != nil || p.PayloadLen == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	k := sendKey{p.Src, p.Dst}
	if p.Map {
		q.mptcp[k] = true
	}
	who := tcpSender
	if q.mptcp[k] {
		who = mptcpSender
	}
	for len(q.q) > 0 && !q.q[0].depart.After(at) {
		q.bytes[q.q[0].who] -= q.q[0].size
		q.q = q.q[1:]
	}
	total := q.bytes[0] + q.bytes[1]
	share := 0.0
	if total > 0 {
		share = float64(q.bytes[1]) / float64(total)
	}
	q.st.offered[who]++
	q.flowOffered[k]++
	if !accepted {
		q.flowDropped[k]++
	}
	if len(pkt) < 1400 {
		q.st.small[who]++
	}
	q.st.mpShareSum += share
	pos := 0
	if !q.prev[who].IsZero() && at.Sub(q.prev[who]) < burstGap {
		pos = 1
	}
	q.prev[who] = at
	q.st.posOffered[who][pos]++
	if !accepted {
		q.st.posDropped[who][pos]++
	}
	if !accepted {
		q.st.dropped[who]++
		q.st.mpShareDrp += share
		switch q.last {
		case who:
			q.st.afterSame[who]++
		case 1 - who:
			q.st.afterOther[who]++
		}
		return
	}
	q.q = append(q.q, queuedPkt{depart, who, len(pkt)})
	q.bytes[who] += len(pkt)
	q.last = who
	if q.limit > 0 && q.limit-(total+len(pkt)) < 2*len(pkt) {
		q.st.nearFull[who]++
	}
}

// perFlow is each flow's data packets offered to the queue and dropped
// per 1000 of them, MPTCP subflows marked.
func (q *queueTrace) perFlow() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for k, n := range q.flowOffered {
		kind := "TCP"
		if q.mptcp[k] {
			kind = "subflow"
		}
		out = append(out, fmt.Sprintf("%s %s: %d offered, %.1f dropped per 1000", kind, k.src, n, 1000*float64(q.flowDropped[k])/float64(max(n, 1))))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func (q *queueTrace) stats() queueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.st
}

func (s queueStats) String() string {
	share := func(v [2]int) string {
		if v[0]+v[1] == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(v[1])/float64(v[0]+v[1]))
	}
	avg := func(sum float64, n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*sum/float64(n))
	}
	later := func(w int) string {
		return fmt.Sprintf("%.0f%% (%.1f / %.1f)", 100*float64(s.posOffered[w][1])/float64(max(s.posOffered[w][0]+s.posOffered[w][1], 1)),
			1000*float64(s.posDropped[w][0])/float64(max(s.posOffered[w][0], 1)), 1000*float64(s.posDropped[w][1])/float64(max(s.posOffered[w][1], 1)))
	}
	return fmt.Sprintf("%s / %s | %s / %s | %d of %d / %d of %d | %s | %s | %s | %.1f%% / %.1f%%", share(s.offered), share(s.dropped),
		avg(s.mpShareSum, s.offered[0]+s.offered[1]), avg(s.mpShareDrp, s.dropped[0]+s.dropped[1]),
		s.afterOther[0], s.dropped[0], s.afterOther[1], s.dropped[1], share(s.nearFull), later(0), later(1),
		100*float64(s.small[0])/float64(max(s.offered[0], 1)), 100*float64(s.small[1])/float64(max(s.offered[1], 1)))
}
