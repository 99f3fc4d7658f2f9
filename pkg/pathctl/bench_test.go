package pathctl_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/xfer"
)

// seedCell is one row of seed 004's tables: path 1's RTT and loss, path 2's.
type seedCell struct {
	rtt1, rtt2   time.Duration
	loss1, loss2 float64
}

// The seed's second table (where aggregation hurts) and, from its first,
// the cells where it works (equal 10 ms paths).
var seedCells = []seedCell{
	{50 * time.Millisecond, 100 * time.Millisecond, 0, 0.001},
	{50 * time.Millisecond, 100 * time.Millisecond, 0, 0.01},
	{50 * time.Millisecond, 150 * time.Millisecond, 0, 0},
	{50 * time.Millisecond, 150 * time.Millisecond, 0, 0.01},
	{50 * time.Millisecond, 200 * time.Millisecond, 0, 0},
	{50 * time.Millisecond, 200 * time.Millisecond, 0, 0.01},
	{10 * time.Millisecond, 10 * time.Millisecond, 0.0001, 0.0001},
	{10 * time.Millisecond, 10 * time.Millisecond, 0.001, 0.01},
}

// TestBenchSeedPAPD is seed 004's experiment on this kernel: aggregation
// efficiency Uc = T_mp / T_best for the kernel's default scheduler alone and
// with the path controller, against the best path alone, side by side in
// one run.
//
// Scaling: the seed's paths carry about 90 Mbit/s; here each path is
// 10 Mbit/s and the server's receive buffer is scaled with it. The seed's
// minRTT numbers (Uc 0.26 at RTT2 = 200 ms, 0.41 at 150 ms) fit a window of
// about 585 KB at 90 Mbit/s (T_mp = buf / RTT_max), so buf/(RTT_max * T')
// is kept by a window of 65 KB at 10 Mbit/s: tcp_rmem's maximum is set to
// twice that (the kernel keeps about half of it for overhead).
//
// PATHCTL_BENCH="reps=N seconds=S" (defaults 2 and 20).
func TestBenchSeedPAPD(t *testing.T) {
	testenv.Bench(t)
	reps, secs := 2, 20
	for _, f := range strings.Fields(os.Getenv("PATHCTL_BENCH")) {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("PATHCTL_BENCH: %q: want key=positive integer", f)
		}
		switch k {
		case "reps":
			reps = n
		case "seconds":
			secs = n
		default:
			t.Fatalf("PATHCTL_BENCH: unknown key %q (reps, seconds)", k)
		}
	}
	const rate = 10e6
	d := time.Duration(secs) * time.Second
	var rows []string
	for _, c := range seedCells {
		var best, def, ctl []float64
		for r := 0; r < reps; r++ {
			best = append(best, goodput(t, c, rate, d, "best"))
			def = append(def, goodput(t, c, rate, d, "default"))
			ctl = append(ctl, goodput(t, c, rate, d, "controller"))
		}
		b := median(best)
		rows = append(rows, fmt.Sprintf("| %v | %.2g | %v | %.2g | %.2f | %.2f | %.2f | %.2f | %.2f |",
			c.rtt1, c.loss1, c.rtt2, c.loss2, median(def)/1e6*8, median(ctl)/1e6*8, b/1e6*8, median(def)/b, median(ctl)/b))
	}
	t.Logf("\n| RTT1 | p1 | RTT2 | p2 | default Mbit/s | controller Mbit/s | best path Mbit/s | Uc default | Uc controller |\n|---|---|---|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}

// goodput runs one transfer of d over the cell's two paths and returns the
// bytes delivered per second: "best" over the better path alone (one
// subflow), "default" over both, "controller" over both with pathctl.
func goodput(t *testing.T, c seedCell, rate float64, d time.Duration, how string) float64 {
	t.Helper()
	n := testkernel.Net(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: uint64(rate), Delay: c.rtt1 / 2, Loss: c.loss1, Seed: 1},
			{RateBits: uint64(rate), Delay: c.rtt2 / 2, Loss: c.loss2, Seed: 2},
		},
		Subflows: how != "best",
	})
	if err := netns.Exec(n.Server, "sysctl", "-q", "-w", "net.ipv4.tcp_rmem=4096 65536 131072"); err != nil {
		t.Fatal(err)
	}
	_, cl := testkernel.Transfer(t, n, xfer.Options{For: d})
	if how == "controller" {
		token := testkernel.Token(t, n.Client, cl.Local())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- pathctl.Run(ctx, pathctl.Options{NS: n.Client, Token: token, Apply: pathctl.PerEndpoint})
		}()
		defer func() {
			cancel()
			if err := <-done; err != nil && err != context.Canceled {
				t.Errorf("controller: %v", err)
			}
		}()
	}
	res, err := cl.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Delivered != res.Sent {
		t.Fatalf("%s: sent %d, delivered %d", how, res.Sent, res.Delivered)
	}
	g := float64(res.Delivered) / res.Duration.Seconds()
	t.Logf("%+v %s: %.2f Mbit/s", c, how, g*8/1e6)
	return g
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
