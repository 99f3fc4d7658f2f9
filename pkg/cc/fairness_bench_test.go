package cc_test

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
	"github.com/mptcp-cc/mptcp-cc/pkg/topo"
)

// The fairness matrix (make bench; docs/results/fairness.md): one MPTCP
// connection against one TCP flow on one shared 20 Mbit/s bottleneck, the
// MPTCP/TCP throughput ratio for every coupled CC and uncoupled Reno, and
// for the same connection with one subflow (what MPTCP can take at all).
// RFC 6356's two goals ask for about 1: no more than one TCP flow (do no
// harm) and no less (improve throughput).
//
// FAIRNESS selects the cells: "quick" (default: 1 and 40 ms, one BDP and
// a 100-packet queue, 2 subflows, Reno reference, 2 runs), or a list such
// as "rtt=1,10,40,100 queue=0.5,1,2,100p subflows=2,4 ref=reno,cubic
// runs=3 cc=reno,lia,olia,balia,rsf,lia:paced offload=off overhead=600"
// (ALGO:paced: loaded with cc.Params.Pacing; overhead in microseconds).
// Each cell also reports, per MPTCP subflow, how
// much of the time tcp_info says it was limited by the receive window or
// the send buffer (the kernel's chrono counters): the candidates for a
// connection that cannot fill its windows; and the packets retransmitted
// per 1000 sent, by the MPTCP subflows and by the TCP flow: at one shared
// drop-tail queue the two should lose alike.
func TestBenchFairness(t *testing.T) {
	testenv.Bench(t)
	m := parseMatrix(t, os.Getenv("FAIRNESS"))
	names := m.load(t)
	var out strings.Builder
	fmt.Fprintf(&out, "| base RTT | queue | subflows | ref | cc | MPTCP/TCP per run | mean | rwnd-limited | sndbuf-limited | window full | data queued | cwnd MPTCP / TCP | retransmitted per 1000 MPTCP / TCP |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	m.each(t, func(c cell, n *topo.Net) {
		for _, ref := range m.refs {
			// The one-subflow connection: MPTCP's own ceiling here.
			for _, algo := range append([]string{"1sf"}, m.ccs...) {
				ratios, lim := fairnessCell(t, n, algo, names, ref, m.runs)
				fmt.Fprintf(&out, "| %g ms | %s (%d B) | %d | %s | %s | %s | **%.2f** | %s | %s | %s | %s | %.0f / %.0f | %.2f / %.2f |\n",
					c.rttMs, c.queue.name, c.queueBytes, c.subflows, ref, algo, joinRatios(ratios), mean(ratios), pct(lim.rwnd), pct(lim.sndbuf),
					pct(lim.cwndFull), pct(lim.queue), lim.mpCwnd, lim.tcpCwnd, lim.mpRetrans, lim.tcpRetrans)
				t.Logf("rtt %g ms queue %s subflows %d ref %s %s: %s mean %.2f (rwnd-limited %s, sndbuf-limited %s, window full %s, queued %s, cwnd %.0f/%.0f, retransmitted per 1000 %.2f/%.2f)",
					c.rttMs, c.queue.name, c.subflows, ref, algo, joinRatios(ratios), mean(ratios), pct(lim.rwnd), pct(lim.sndbuf),
					pct(lim.cwndFull), pct(lim.queue), lim.mpCwnd, lim.tcpCwnd, lim.mpRetrans, lim.tcpRetrans)
			}
		}
	})
	t.Logf("\n%s", out.String())
	if f := os.Getenv("FAIRNESS_OUT"); f != "" {
		if err := os.WriteFile(f, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// limits says why the MPTCP subflows did not send more: tcp_info's chrono
// counters (time limited by the peer's receive window or the send buffer,
// over busy time), and samples every 50 ms of whether a subflow had its
// window full (packets out >= cwnd) and data queued but unsent, and of
// the windows of the subflows and of the TCP flow.
type limits struct {
	rwnd, sndbuf    float64
	cwndFull, queue float64 // fraction of subflow samples
	mpCwnd, tcpCwnd float64 // mean window, summed over the subflows / the TCP flow
	// packets retransmitted per 1000 sent, by the MPTCP subflows / the TCP flow
	mpRetrans, tcpRetrans float64
}

// fairnessCell runs one case several times. c is "1sf" (MPTCP with a
// single Reno subflow), "reno" (uncoupled Reno on every subflow) or an
// algorithm.
func fairnessCell(t *testing.T, n *topo.Net, c string, names map[string]string, ref string, runs int) ([]float64, limits) {
	mp := flow{path: 0, mptcp: true, cc: names[c]}
	if c == "1sf" {
		// MPTCP with its first subflow only (the client's subflow limit
		// at 0), running Reno.
		mp.cc = "reno"
	}
	var ratios []float64
	var lim limits
	for i := 0; i < runs; i++ {
		var before, after []sockdiag.Socket
		var smp *tcpSampler
		snap := func(end bool) {
			s, err := sockdiag.Dump(n.Client, unix.AF_INET, sockdiag.StateSet(sockdiag.Established))
			if err != nil {
				t.Fatal(err)
			}
			if end {
				after = s
				smp.stop()
			} else {
				before = s
				smp = sampleTCP(n.Client, 50*time.Millisecond)
			}
		}
		restore := singleSubflow(t, n, c == "1sf")
		m := &meter{t: t}
		mbps := m.run(n, []flow{mp, {path: 0, cc: ref}}, 8*time.Second, 15*time.Second, snap)
		restore()
		ratios = append(ratios, mbps[0]/mbps[1])
		l := chronoLimits(before, after)
		f := float64(runs)
		lim.rwnd += l.rwnd / f
		lim.sndbuf += l.sndbuf / f
		lim.mpRetrans += l.mpRetrans / f
		lim.tcpRetrans += l.tcpRetrans / f
		lim.cwndFull += smp.cwndFull() / f
		lim.queue += smp.queued() / f
		lim.mpCwnd += smp.mpCwnd() / f
		lim.tcpCwnd += smp.tcpCwnd() / f
	}
	return ratios, lim
}

// singleSubflow sets the client's subflow limit to 0 when on, so the MPTCP
// connection keeps its first subflow only, and returns what puts it back.
func singleSubflow(t *testing.T, n *topo.Net, on bool) func() {
	if !on {
		return func() {}
	}
	if err := netns.Exec(n.Client, "ip", "mptcp", "limits", "set", "subflows", "0"); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := netns.Exec(n.Client, "ip", "mptcp", "limits", "set", "subflows", "8"); err != nil {
			t.Fatal(err)
		}
	}
}

// chronoLimits is the part of the busy time the MPTCP subflows spent
// limited by the receive window and by the send buffer, between two dumps
// (tcp_info's chrono counters, in microseconds), and the packets the
// subflows and the TCP flow retransmitted per 1000 they sent.
func chronoLimits(before, after []sockdiag.Socket) limits {
	prev := map[string]unix.TCPInfo{}
	for _, s := range before {
		prev[s.Local.String()+s.Remote.String()] = s.Info
	}
	var busy, rwnd, sndbuf float64
	var sent, retrans [2]float64 // [0] MPTCP subflows, [1] TCP
	for _, s := range after {
		p, ok := prev[s.Local.String()+s.Remote.String()]
		if !ok || s.Info.Bytes_sent == 0 {
			continue // a subflow born in the window, or the server side
		}
		i := 1
		if s.MPTCP {
			i = 0
			busy += float64(s.Info.Busy_time - p.Busy_time)
			rwnd += float64(s.Info.Rwnd_limited - p.Rwnd_limited)
			sndbuf += float64(s.Info.Sndbuf_limited - p.Sndbuf_limited)
		}
		sent[i] += float64(s.Info.Data_segs_out - p.Data_segs_out)
		retrans[i] += float64(s.Info.Total_retrans - p.Total_retrans)
	}
	l := limits{mpRetrans: 1000 * retrans[0] / max(sent[0], 1), tcpRetrans: 1000 * retrans[1] / max(sent[1], 1)}
	if busy > 0 {
		l.rwnd, l.sndbuf = rwnd/busy, sndbuf/busy
	}
	return l
}

type queueSize struct {
	name string
	bdp  float64 // in bandwidth-delay products, or 0
	pkts int     // fixed packets, or 0
}

func (q queueSize) bytes(rate float64, rtt time.Duration) uint32 {
	if q.pkts > 0 {
		return uint32(q.pkts * 1500)
	}
	b := uint32(q.bdp * rate / 8 * rtt.Seconds())
	return max(b, 3*1500) // tbf needs room for a few packets
}

type matrix struct {
	rtts     []float64
	queues   []queueSize
	subflows []int
	refs     []string
	ccs      []string
	runs     int
	// noOffload turns TSO/GSO/GRO off on every veth ("offload=off"), so
	// every packet is one segment from the sender to the bottleneck.
	noOffload bool
	// overhead: a random delay before the bottleneck's queue
	// ("overhead=US", microseconds; linkem.DirectionConfig.Overhead)
	overhead time.Duration
}

func parseMatrix(t *testing.T, spec string) matrix {
	m := matrix{
		rtts:     []float64{1, 40},
		queues:   []queueSize{{name: "1 BDP", bdp: 1}, {name: "100 pkts", pkts: 100}},
		subflows: []int{2},
		refs:     []string{"reno"},
		ccs:      []string{"reno", "lia", "olia", "balia", "rsf"},
		runs:     2,
	}
	if spec == "" || spec == "quick" {
		return m
	}
	for _, field := range strings.Fields(spec) {
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			t.Fatalf("FAIRNESS: %q is not key=value", field)
		}
		list := strings.Split(v, ",")
		switch k {
		case "rtt":
			m.rtts = nil
			for _, s := range list {
				f, err := strconv.ParseFloat(s, 64)
				if err != nil {
					t.Fatalf("FAIRNESS rtt %q: %v", s, err)
				}
				m.rtts = append(m.rtts, f)
			}
		case "queue":
			m.queues = nil
			for _, s := range list {
				if p, ok := strings.CutSuffix(s, "p"); ok {
					n, err := strconv.Atoi(p)
					if err != nil {
						t.Fatalf("FAIRNESS queue %q: %v", s, err)
					}
					m.queues = append(m.queues, queueSize{name: s[:len(s)-1] + " pkts", pkts: n})
					continue
				}
				f, err := strconv.ParseFloat(s, 64)
				if err != nil {
					t.Fatalf("FAIRNESS queue %q: %v", s, err)
				}
				m.queues = append(m.queues, queueSize{name: s + " BDP", bdp: f})
			}
		case "subflows":
			m.subflows = nil
			for _, s := range list {
				n, err := strconv.Atoi(s)
				if err != nil {
					t.Fatalf("FAIRNESS subflows %q: %v", s, err)
				}
				m.subflows = append(m.subflows, n)
			}
		case "ref":
			m.refs = list
		case "cc":
			m.ccs = list
		case "runs":
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("FAIRNESS runs %q: %v", v, err)
			}
			m.runs = n
		case "overhead":
			us, err := strconv.Atoi(v)
			if err != nil || us < 0 {
				t.Fatalf("FAIRNESS overhead %q: want microseconds", v)
			}
			m.overhead = time.Duration(us) * time.Microsecond
		case "offload":
			if v != "on" && v != "off" {
				t.Fatalf("FAIRNESS offload %q: want on or off", v)
			}
			m.noOffload = v == "off"
		default:
			t.Fatalf("FAIRNESS: unknown key %q (rtt, queue, subflows, ref, cc, runs, offload, overhead)", k)
		}
	}
	return m
}

// fairRate is the shared bottleneck's rate, bits/s.
const fairRate = 20e6

// cell is one network of the matrix.
type cell struct {
	rttMs      float64
	queue      queueSize
	queueBytes uint32
	subflows   int
}

// each builds the network of every cell in turn (one bottleneck of
// fairRate; one client path per subflow, all through it) and calls f.
func (m matrix) each(t *testing.T, f func(cell, *topo.Net)) {
	for _, rttMs := range m.rtts {
		for _, q := range m.queues {
			oneWay := time.Duration(rttMs * float64(time.Millisecond) / 2)
			c := cell{rttMs: rttMs, queue: q, queueBytes: q.bytes(fairRate, 2*oneWay)}
			for _, nsub := range m.subflows {
				c.subflows = nsub
				f(c, testkernel.Net(t, topo.Config{
					Paths:       make([]int, nsub),
					Bottlenecks: []topo.Shaping{{RateBits: fairRate, Delay: oneWay, QueueBytes: c.queueBytes, Overhead: m.overhead, Seed: 1}},
					Subflows:    true,
					NoOffload:   m.noOffload,
				}))
			}
		}
	}
}

// load loads the matrix's algorithms (ALGO:paced with pacing on) and
// returns the registered name of each; "reno" is the kernel's.
func (m matrix) load(t *testing.T) map[string]string {
	root := testkernel.PinRoot(t)
	names := map[string]string{"reno": "reno"}
	for _, a := range m.ccs {
		if a != "reno" {
			algo, paced := strings.CutSuffix(a, ":paced")
			names[a] = testkernel.Load(t, root, algo, cc.Params{RSFTarget: cc.DefaultRSFTarget, Pacing: paced})
		}
	}
	return names
}

func joinRatios(r []float64) string {
	s := make([]string, len(r))
	for i, v := range r {
		s[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(s, ", ")
}

func mean(r []float64) float64 {
	var s float64
	for _, v := range r {
		s += v
	}
	return s / float64(len(r))
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

// tcpSampler dumps the client's sockets at an interval.
type tcpSampler struct {
	done, stopped           chan struct{}
	sub, full, queue, dumps int
	mpSum, tcpSum           float64
}

func sampleTCP(ns string, every time.Duration) *tcpSampler {
	s := &tcpSampler{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(s.stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
			socks, err := sockdiag.Dump(ns, unix.AF_INET, sockdiag.StateSet(sockdiag.Established))
			if err != nil {
				continue
			}
			s.dumps++
			for _, k := range socks {
				if k.Info.Bytes_sent == 0 {
					continue // the server side or an idle socket
				}
				if !k.MPTCP {
					s.tcpSum += float64(k.Info.Snd_cwnd)
					continue
				}
				s.sub++
				s.mpSum += float64(k.Info.Snd_cwnd)
				if k.Info.Unacked >= k.Info.Snd_cwnd {
					s.full++
				}
				if k.Info.Notsent_bytes > 0 {
					s.queue++
				}
			}
		}
	}()
	return s
}

func (s *tcpSampler) stop() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	<-s.stopped
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

func (s *tcpSampler) cwndFull() float64 { return ratio(s.full, s.sub) }
func (s *tcpSampler) queued() float64   { return ratio(s.queue, s.sub) }
func (s *tcpSampler) mpCwnd() float64   { return s.mpSum / float64(max(s.dumps, 1)) }
func (s *tcpSampler) tcpCwnd() float64  { return s.tcpSum / float64(max(s.dumps, 1)) }
