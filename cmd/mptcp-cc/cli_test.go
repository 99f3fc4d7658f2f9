// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// The tests run the real binary (testenv.Binary builds it once).
func TestMain(m *testing.M) { testenv.Main(m) }

// The CLI's contract on bad input: a message that names the problem and the
// fix, a non-zero exit, and nothing registered or pinned.
func TestCLIErrors(t *testing.T) {
	root := testkernel.PinRoot(t)
	bin := testenv.Binary(t, ".")
	name := testenv.Unique("t_cli_")
	mptcpcc := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append(args, "--bpffs", root)...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	t.Cleanup(func() { _ = cc.Unload(name, root) })

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"load", "--algo", "cubic2"}, "unknown algorithm \"cubic2\": choose one of balia, lia, olia, rsf"},
		{[]string{"load"}, "--algo is required"},
		{[]string{"load", "--algo", "lia", "--name", "reno"}, "already registered"},
		{[]string{"load", "--algo", "lia", "--name", "much_too_long_a_name"}, "1 to 15 characters"},
		{[]string{"unload", "--name", name}, "is not loaded"},
		{[]string{"load", "--algo", "rsf", "--rsf-target", "-1s"}, "out of range"},
	}
	for _, c := range cases {
		out, code := mptcpcc(c.args...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("mptcp-cc %s: exit %d, output %q; want non-zero and %q", strings.Join(c.args, " "), code, out, c.want)
		}
	}

	if out, code := mptcpcc("load", "--algo", "lia", "--name", name); code != 0 {
		t.Fatalf("load: exit %d: %s", code, out)
	}
	if out, code := mptcpcc("load", "--algo", "lia", "--name", name); code == 0 || !strings.Contains(out, "already loaded") || !strings.Contains(out, "unload") {
		t.Errorf("second load: exit %d, %q", code, out)
	}
	if out, _ := mptcpcc("list"); !strings.Contains(out, name) || !strings.Contains(out, "registered") {
		t.Errorf("list does not show %s: %q", name, out)
	}

	// Without privileges: refused before anything is touched.
	if _, err := exec.LookPath("setpriv"); err == nil {
		cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin, "load", "--algo", "olia", "--bpffs", root)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), "needs root") {
			t.Errorf("unprivileged load: exit %d, %q", cmd.ProcessState.ExitCode(), out)
		}
		if cc.IsRegistered("mptcp_olia") && os.Getenv("CI") != "" {
			t.Errorf("an unprivileged load registered mptcp_olia")
		}
	} else {
		t.Log("setpriv not found: unprivileged case not checked")
	}

	if out, code := mptcpcc("unload", "--name", name); code != 0 {
		t.Fatalf("unload: exit %d: %s", code, out)
	}
	if cc.IsRegistered(name) {
		t.Fatalf("%s registered after unload", name)
	}
}

// `mptcp-cc top --once --json --netns CLIENT` during a two-path transfer:
// one connection, both subflows with the path manager's address ids, a
// delivery rate from the bytes_acked deltas, the connection's age from the
// events; the text view shows the same connection.
func TestTopLive(t *testing.T) {
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 20e6)
	name := testkernel.Load(t, root, "lia", cc.Params{RSFTarget: cc.DefaultRSFTarget})
	top := func(args ...string) *exec.Cmd {
		return exec.Command(testenv.Binary(t, "."), append([]string{"top", "--bpffs", root, "--netns", n.Client}, args...)...)
	}
	// Subscribe before the connection exists, so its CREATED event is seen;
	// stream frames until one has the connection with both subflows' rates.
	jsonTop := top("--json", "--interval", "400ms")
	stdout, err := jsonTop.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	jsonTop.Stderr = &stderr
	if err := jsonTop.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = jsonTop.Process.Kill(); _ = jsonTop.Wait() })
	time.Sleep(300 * time.Millisecond)

	_, c := testkernel.Transfer(t, n, xfer.Options{CC: name, For: 4 * time.Second})
	type topFrame struct {
		Connections []struct {
			Token, CC, Algo string
			Created         time.Time
			Rate            float64 `json:"delivery_rate_bytes_per_second"`
			Subflows        []struct {
				SubflowID uint32  `json:"subflow_id"`
				LocalID   uint8   `json:"local_id"`
				Local     string  `json:"local"`
				Cwnd      uint32  `json:"cwnd_segments"`
				Rate      float64 `json:"delivery_rate_bytes_per_second"`
			}
		}
		Events map[string]uint64
	}
	var frame topFrame
	frames := 0
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	deadline := time.Now().Add(4 * time.Second)
	for sc.Scan() {
		var f topFrame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("top --json line: %v\n%s", err, sc.Text())
		}
		frames++
		frame = f
		if len(f.Connections) == 1 && len(f.Connections[0].Subflows) == 2 && f.Connections[0].Subflows[0].Rate > 0 && f.Connections[0].Subflows[1].Rate > 0 {
			break
		}
		if time.Now().After(deadline) {
			break
		}
	}
	_ = jsonTop.Process.Signal(syscall.SIGINT)
	if err := jsonTop.Wait(); err != nil {
		t.Errorf("top --json after SIGINT: %v\n%s", err, stderr.String())
	}
	t.Logf("%d frames", frames)
	if len(frame.Connections) != 1 {
		t.Fatalf("connections: %+v", frame.Connections)
	}
	conn := frame.Connections[0]
	if conn.CC != name || len(conn.Subflows) != 2 || conn.Created.IsZero() || conn.Rate <= 0 {
		t.Fatalf("connection: %+v", conn)
	}
	ids := map[string]uint8{}
	for _, s := range conn.Subflows {
		ids[strings.Split(s.Local, ":")[0]] = s.LocalID
		if s.Rate <= 0 || s.Cwnd == 0 {
			t.Errorf("subflow without rate or cwnd: %+v", s)
		}
	}
	if ids["10.0.0.1"] != 0 || ids["10.0.1.1"] == 0 {
		t.Errorf("address ids by local address %v: want 0 for the initial subflow, the endpoint's id for the join", ids)
	}
	if frame.Events["CREATED"] < 1 || frame.Events["SUB_ESTABLISHED"] < 1 {
		t.Errorf("event counts %v", frame.Events)
	}

	out, err := top("--once", "--sort", "cwnd", "--interval", "300ms").CombinedOutput()
	if err != nil {
		t.Fatalf("top --once: %v\n%s", err, out)
	}
	text := string(out)
	t.Logf("top --once:\n%s", text)
	for _, want := range []string{"sort cwnd", "1 connection(s), 2 subflow(s)", conn.Token, "├ sf", "└ sf", "bit/s", "mptcp_pm events in netns " + n.Client} {
		if !strings.Contains(text, want) {
			t.Errorf("top --once lacks %q:\n%s", want, text)
		}
	}
	res, err := c.Wait()
	if err != nil {
		t.Fatalf("transfer: %v", err)
	}
	testkernel.Receipt(t, "transfer", res, 0)

	// Bad flags: a clear error.
	cmd := top("--sort", "speed")
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), `unknown sort key "speed": one of cwnd, srtt, rate, token`) {
		t.Errorf("--sort speed: exit %d %s", cmd.ProcessState.ExitCode(), out)
	}
}
