// SPDX-License-Identifier: Apache-2.0

package sched_test

import (
	"math/bits"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/schedmodel"
)

// run is one traced transfer with the scheduler loaded as name.
type run struct {
	algo     string
	payload  uint64
	wire     []uint64 // bytes each bottleneck carried toward the server
	took     time.Duration
	events   []schedmodel.Trace
	mibRetx  uint64 // MPTcpExtMPTCPRetrans of the client namespace: reinjected segments
	tcpRetx  uint64 // TcpRetransSegs of the client namespace: segments TCP sent again
	ofo      uint64 // MPTcpExtOFOQueue of the server namespace: segments that arrived out of order
	stale    uint64 // MPTcpExtSubflowStale of the client namespace: whole queue sent again
	sends    uint64 // from the stats map: get_send decisions that marked a subflow, per subflow summed
	retrans  uint64 // get_retrans decisions, per subflow summed
	decision struct{ send, retrans, empty int }
}

// transfer sends payload bytes from n's client with scheduler name (of
// algorithm algo, loaded with tracing under root) and checks what every
// transfer must show: the data arrived intact, and every traced decision
// replays identically through the model. during, if not nil, runs while
// the transfer does.
func transfer(t *testing.T, n *topo.Net, root, name, algo string, args schedmodel.Args, payload uint64, during func()) run {
	t.Helper()
	if err := sched.Use(name, n.Client); err != nil {
		t.Fatal(err)
	}
	tr, err := sched.ReadTrace(root, name)
	if err != nil {
		t.Fatal(err)
	}
	before := statsOf(t, root, name)
	mib0 := testkernel.MIBCounter(t, n.Client, "MPTcpExtMPTCPRetrans")
	tcp0 := testkernel.MIBCounter(t, n.Client, "TcpRetransSegs")
	ofo0 := testkernel.MIBCounter(t, n.Server, "MPTcpExtOFOQueue")
	stale0 := testkernel.MIBCounter(t, n.Client, "MPTcpExtSubflowStale")
	w0 := wire(t, n, 2)
	_, c := testkernel.Transfer(t, n, xfer.Options{Bytes: int64(payload)})
	if during != nil {
		during()
	}
	res, err := c.Wait()
	events, terr := tr.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if terr != nil {
		t.Fatal(terr)
	}
	if !res.Intact || res.Delivered != int64(payload) {
		t.Fatalf("%s: transfer not intact: %+v", algo, res)
	}
	r := run{algo: algo, payload: payload, wire: diff(wire(t, n, 2), w0), took: res.Duration, events: events,
		mibRetx: testkernel.MIBCounter(t, n.Client, "MPTcpExtMPTCPRetrans") - mib0,
		tcpRetx: testkernel.MIBCounter(t, n.Client, "TcpRetransSegs") - tcp0,
		ofo:     testkernel.MIBCounter(t, n.Server, "MPTcpExtOFOQueue") - ofo0,
		stale:   testkernel.MIBCounter(t, n.Client, "MPTcpExtSubflowStale") - stale0}
	after := statsOf(t, root, name)
	r.sends, r.retrans = after[0]-before[0], after[1]-before[1]
	for _, e := range events {
		switch {
		case e.Out.Mask&(1<<e.Conn.N-1) == 0:
			r.decision.empty++
		case e.Conn.Retrans != 0:
			r.decision.retrans++
		default:
			r.decision.send++
		}
	}
	replay(t, algo, args, events)
	t.Logf("%s: %d bytes in %v; on the wire %d + %d (%.3fx the payload, %.1f%% on path 1); decisions: %d send, %d retrans, %d empty; reinjected segments %d; TCP retransmitted segments %d; %d segments out of order at the server; %d subflows marked stale",
		algo, payload, r.took.Round(time.Millisecond), r.wire[0], r.wire[1], r.factor(), 100*r.share(1),
		r.decision.send, r.decision.retrans, r.decision.empty, r.mibRetx, r.tcpRetx, r.ofo, r.stale)
	return r
}

func (r run) factor() float64 { return float64(sum(r.wire)) / float64(r.payload) }

func (r run) share(path int) float64 { return float64(r.wire[path]) / float64(sum(r.wire)) }

// statsOf sums what the stats map of scheduler name counts: sends, retrans.
func statsOf(t *testing.T, root, name string) [2]uint64 {
	t.Helper()
	st, err := sched.Stats(root)
	if err != nil {
		t.Fatal(err)
	}
	var out [2]uint64
	for _, s := range st {
		if s.Scheduler == name {
			out[0] += s.Sends
			out[1] += s.Retrans
		}
	}
	return out
}

// sysctl sets key (dotted) to val in network namespace ns until the test
// ends.
func sysctl(t *testing.T, ns, key, val string) {
	t.Helper()
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	var old []byte
	err := netns.Do(ns, func() error {
		var err error
		if old, err = os.ReadFile(path); err != nil {
			return err
		}
		return os.WriteFile(path, []byte(val), 0o644)
	})
	if err != nil {
		t.Fatalf("sysctl %s=%q in %s: %v", key, val, ns, err)
	}
	t.Cleanup(func() {
		if err := netns.Do(ns, func() error { return os.WriteFile(path, old, 0o644) }); err != nil {
			t.Errorf("restoring %s in %s: %v", key, ns, err)
		}
	})
}

// network builds cfg for a scheduler test, with the path manager's
// stale-subflow rule off in the client. That rule (a subflow with repeated
// retransmit timeouts while a sibling is fine) puts the whole
// unacknowledged queue back through the push path, and no counter gives
// those bytes, so checkWire could not account for them. Measured: it fired
// in 3 of 5 redundant runs (the long path blacks out), and one CI run went
// 184 kB past the bound. It is the path manager's doing, not the
// scheduler's.
func network(t *testing.T, cfg topo.Config) *topo.Net {
	t.Helper()
	n := testkernel.Net(t, cfg)
	sysctl(t, n.Client, "net.mptcp.stale_loss_cnt", "0")
	return n
}

// equalPaths is two paths of rate bits/s each, unshaped in delay (tbf in
// the kernel: cheap for the VM's emulated CPU).
func equalPaths(t *testing.T, rate uint64) *topo.Net {
	return network(t, topo.Config{
		Paths:       []int{0, 1},
		Bottlenecks: []topo.Shaping{{RateBits: rate}, {RateBits: rate}},
		Subflows:    true,
	})
}

// usableMask is the set of subflows a scheduler may use now (sf_usable in
// the current tier), from the snapshot.
func usableMask(c *schedmodel.Conn) uint32 {
	var all, nonBackup uint32
	for i := 0; i < int(c.N); i++ {
		f := c.Sf[i]
		if f.Flags&(schedmodel.Active|schedmodel.MemFree) != schedmodel.Active|schedmodel.MemFree {
			continue
		}
		all |= 1 << i
		if f.Flags&schedmodel.Backup == 0 {
			nonBackup |= 1 << i
		}
	}
	if nonBackup != 0 {
		return nonBackup
	}
	return all
}

// fragMax bounds one reinjection on one subflow: __mptcp_retrans() sends
// the retransmit head, one data fragment, carved from a page fragment of at
// most 32 KiB; 10% more for headers.
const fragMax = 32 << 10 * 11 / 10

// segMax bounds one TCP segment on the wire: an MSS of 1448 and headers
// (IPv4, TCP with timestamps, the MPTCP DSS option).
const segMax = 1600

// resent is the most the kernel's own retransmissions can have put on the
// wire during r: one fragment per subflow each retrans decision marked
// (MPTCP reinjections), one segment per TCP retransmission.
func (r run) resent() uint64 {
	var n uint64
	for _, e := range r.events {
		if e.Conn.Retrans != 0 {
			n += uint64(bits.OnesCount32(e.Out.Mask & (1<<e.Conn.N - 1)))
		}
	}
	return n*fragMax + r.tcpRetx*segMax
}

// checkWire fails when the wire carried more than 1.1x the payload beyond
// what the kernel's retransmissions account for: new data goes out once.
func checkWire(t *testing.T, r run) {
	t.Helper()
	if r.stale != 0 {
		t.Errorf("%s: %d subflows marked stale: the path manager sent the queue again, which the wire accounting cannot count (build the network with network())", r.algo, r.stale)
		return
	}
	limit := r.payload*11/10 + r.resent()
	if w := sum(r.wire); w > limit {
		t.Errorf("%s: %d bytes on the wire for %d of payload: more than 1.1x plus what %d bytes of reinjections and TCP retransmissions explain", r.algo, w, r.payload, r.resent())
	}
}

// TestGuestSchedulers checks rr, redundant, blest and ecf in the VM, each
// in a subtest. They share one network of two paths at 8 Mbit/s, of 10 ms
// and 100 ms RTT, the short one with a queue of 15 kB (about 10 packets:
// its window fills, so minrtt spills onto the long path): building a
// network is most of the cost of a test in the emulated VM.
func TestGuestSchedulers(t *testing.T) {
	vmtest.Guest(t)
	root := testkernel.PinRoot(t)
	n := network(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: 8e6, Delay: 5 * time.Millisecond, QueueBytes: 15000},
			{RateBits: 8e6, Delay: 50 * time.Millisecond},
		},
		Subflows: true,
	})
	// Each subtest starts from what its connections learn, not from the
	// RTTs and thresholds the kernel cached from the one before.
	for _, ns := range []string{n.Client, n.Server} {
		sysctl(t, ns, "net.ipv4.tcp_no_metrics_save", "1")
	}
	t.Run("rr", func(t *testing.T) { testRR(t, root, n) })
	t.Run("redundant", func(t *testing.T) { testRedundant(t, root, n) })
	t.Run("blest-ecf", func(t *testing.T) { testHoL(t, root, n) })
}

// rr: on two equal paths it splits the bytes about evenly; on the unequal
// ones what it does is logged (reported in docs/schedulers.md),
// and its wire bytes checked.
func testRR(t *testing.T, root string, unequal *topo.Net) {
	name := load(t, root, "rr", sched.Params{Trace: true})
	const payload = 4 << 20

	r := transfer(t, equalPaths(t, 8e6), root, name, "rr", schedmodel.Args{}, payload, nil)
	if r.factor() > 1.1 {
		t.Errorf("equal paths: %.3fx the payload on the wire, more than 1.1x", r.factor())
	}
	if s := r.share(1); s < 0.4 || s > 0.6 {
		t.Errorf("equal paths: %.1f%% of the bytes on path 1, want 40-60%%", 100*s)
	}

	u := transfer(t, unequal, root, name, "rr", schedmodel.Args{}, payload, nil)
	checkWire(t, u)
	t.Logf("unequal paths (10 ms, 100 ms RTT): %.1f%% on the long path in %v; %.3fx the payload on the wire, %d retrans decisions",
		100*u.share(1), u.took.Round(time.Millisecond), u.factor(), u.decision.retrans)
}

// blackout drops everything the client sends on device dev of namespace
// ns for d: the path fails and comes back.
func blackout(t *testing.T, ns, dev string, d time.Duration) {
	t.Helper()
	if err := netns.Exec(ns, "tc", "qdisc", "add", "dev", dev, "root", "netem", "loss", "100%"); err != nil {
		t.Fatalf("blacking out %s: %v", dev, err)
	}
	time.Sleep(d)
	if err := netns.Exec(ns, "tc", "qdisc", "del", "dev", dev, "root"); err != nil {
		t.Fatalf("restoring %s: %v", dev, err)
	}
}

// redundant: every decision, new data or reinjection, marks every usable
// subflow; new data is spread, not duplicated (the wire carries about the
// payload, plus what the reinjections explain); reinjections are
// duplicated on every subflow. The long path blacks out for half a second
// during the transfer, so that the kernel has data to reinject (its
// retransmit timer runs out while the dead path holds the head of the data).
func testRedundant(t *testing.T, root string, n *topo.Net) {
	name := load(t, root, "redundant", sched.Params{Trace: true})
	const payload = 4 << 20

	r := transfer(t, n, root, name, "redundant", schedmodel.Args{}, payload, func() {
		time.Sleep(800 * time.Millisecond)
		blackout(t, n.Client, "p1", 500*time.Millisecond)
	})
	dup := 0
	for i, e := range r.events {
		want := usableMask(&e.Conn)
		if got := e.Out.Mask & (1<<e.Conn.N - 1); got != want {
			t.Fatalf("decision %d (retrans %d): marked %b, usable %b", i, e.Conn.Retrans, got, want)
		}
		if e.Conn.Retrans != 0 && bits.OnesCount32(want) > 1 {
			dup++
		}
	}
	t.Logf("redundant: %.3fx the payload on the wire (%.1f%% on the long path); %d of %d retrans decisions duplicated on 2 subflows; stats map %d sends, %d retrans; MPTcpExtMPTCPRetrans %d; retransmissions explain at most %d bytes",
		r.factor(), 100*r.share(1), dup, r.decision.retrans, r.sends, r.retrans, r.mibRetx, r.resent())
	checkWire(t, r)
	if s := r.share(1); s < 0.1 {
		t.Errorf("the long path carried %.1f%%: redundant puts new data on every subflow", 100*s)
	}
	if dup == 0 {
		t.Errorf("no reinjection went to both subflows (%d retrans decisions): nothing duplicated to show", r.decision.retrans)
	}
	if r.mibRetx < uint64(dup) {
		t.Errorf("MPTcpExtMPTCPRetrans %d: fewer reinjected segments than the %d decisions that duplicated one", r.mibRetx, dup)
	}
}

// blest and ecf against minrtt where the slow path blocks the fast one: a
// 64 KiB receive buffer at the server, and send buffers of at most 32 KiB
// per subflow at the client. ECF weighs the data waiting to be sent, not
// the receive window: with 64 KiB send buffers the backlog grows past
// what the fast path clears in one slow RTT, and ECF then rightly uses both
// paths (measured: 8 to 31% on the slow one). Two rounds; the slow path's
// share is pooled, completion is the best of each.
func testHoL(t *testing.T, root string, n *topo.Net) {
	algos := []string{"minrtt", "blest", "ecf"}
	names := map[string]string{}
	for _, a := range algos {
		names[a] = load(t, root, a, sched.Params{Trace: true})
	}
	sysctl(t, n.Server, "net.ipv4.tcp_rmem", "4096 65536 65536")
	sysctl(t, n.Client, "net.ipv4.tcp_wmem", "4096 16384 32768")
	const payload = 2 << 20
	slow, all := map[string]uint64{}, map[string]uint64{}
	best := map[string]time.Duration{}
	for round := 0; round < 2; round++ {
		for _, a := range algos {
			r := transfer(t, n, root, names[a], a, schedmodel.Args{}, payload, nil)
			checkWire(t, r)
			slow[a] += r.wire[1]
			all[a] += sum(r.wire)
			if best[a] == 0 || r.took < best[a] {
				best[a] = r.took
			}
		}
	}
	share := func(a string) float64 { return float64(slow[a]) / float64(all[a]) }
	for _, a := range algos {
		t.Logf("%s: %.1f%% of the bytes on the 100 ms path, best completion %v", a, 100*share(a), best[a].Round(time.Millisecond))
	}
	if share("minrtt") < 0.1 {
		t.Fatalf("minrtt put only %.1f%% on the slow path: the network does not make it block the fast one, nothing to compare", 100*share("minrtt"))
	}
	for _, a := range algos[1:] {
		if share(a) > share("minrtt")/2 {
			t.Errorf("%s put %.1f%% on the slow path, minrtt %.1f%%: want at most half of minrtt's", a, 100*share(a), 100*share("minrtt"))
		}
		if float64(best[a]) > 1.25*float64(best["minrtt"]) {
			t.Errorf("%s took %v at best, minrtt %v: more than 25%% slower", a, best[a], best["minrtt"])
		}
	}
}
