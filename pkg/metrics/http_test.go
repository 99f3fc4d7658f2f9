// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// blockedSource is a Source whose reads wait for release, or fail.
type blockedSource struct {
	reading chan struct{}
	release chan struct{}
}

func (s blockedSource) Read() (stats.Snapshot, error) {
	s.reading <- struct{}{}
	<-s.release
	return stats.Snapshot{}, errors.New("maps unreadable")
}

// /healthz is the kubelet's liveness and readiness probe
// (deploy/kubernetes): it must answer while every scrape slot is taken by
// a slow read of the maps, and when the maps cannot be read, or the kubelet
// would restart a daemon whose restart changes nothing.
func TestHealthzIndependentOfScrapes(t *testing.T) {
	src := blockedSource{reading: make(chan struct{}, 16), release: make(chan struct{})}
	srv := httptest.NewServer(Handler(NewCollector(src, Options{Logger: quiet()}), nil))
	defer srv.Close()
	get := func(path string) (int, string) {
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	scrapes := make(chan int, 4)
	for range 4 {
		go func() { code, _ := get("/metrics"); scrapes <- code }()
	}
	<-src.reading
	// Scrapes are serialised: the others wait for the first's read, holding
	// their slots. Once four hold one, another is refused at once. A probe
	// that got a slot before that waits too, holding it: give up on it.
	quick := http.Client{Timeout: 200 * time.Millisecond}
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err := quick.Get(srv.URL + "/metrics")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("scrapes beyond four concurrent ones are not refused: %v", err)
		}
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz with every scrape slot busy: %d %q, want 200 \"ok\\n\"", code, body)
	}
	close(src.release)
	// The one that read answers; the others may have lost their slot to a
	// probe above.
	codes := map[int]int{}
	for range 4 {
		codes[<-scrapes]++
	}
	if codes[http.StatusOK] == 0 || codes[http.StatusOK]+codes[http.StatusServiceUnavailable] != 4 {
		t.Errorf("scrapes over unreadable maps answered %v; want 200 (with mptcp_cc_scrape_error 1), or 503 when no slot was free", codes)
	}
}
