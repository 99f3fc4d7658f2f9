// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/lab/report"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

var caNames = []string{"open", "disorder", "cwr", "recovery", "loss"}

// sampler records, every interval, each running flow's receiver byte count
// and the state of each of its subflows: the kernel's view (tcp_info via
// sock_diag in the client namespace, any congestion control) joined with
// mptcp-cc's per-subflow map (our congestion controls: coupled quantity,
// LISA shares).
type sampler struct {
	t0       time.Time
	interval time.Duration
	kernel   bool
	bpf      bool
	ccs      *CCSet
	insts    []*flowInst
	diag     map[string]*sockdiag.Conn

	samples []report.SubflowSample
	goodput []report.GoodputSample
	errs    map[string]int
	stopc   chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newSampler(t0 time.Time, rec scenario.Record, ccs *CCSet, insts []*flowInst) (*sampler, error) {
	s := &sampler{t0: t0, interval: rec.Sample, kernel: rec.Kernel, bpf: rec.BPF && ccs != nil, ccs: ccs, insts: insts,
		diag: map[string]*sockdiag.Conn{}, errs: map[string]int{}, stopc: make(chan struct{}), done: make(chan struct{})}
	if s.kernel {
		for _, fi := range insts {
			if s.diag[fi.ns] != nil {
				continue
			}
			d, err := sockdiag.DialNS(fi.ns)
			if err != nil {
				s.close()
				return nil, err
			}
			s.diag[fi.ns] = d
		}
	}
	return s, nil
}

func (s *sampler) start() {
	go func() {
		defer close(s.done)
		tk := time.NewTicker(s.interval)
		defer tk.Stop()
		s.tick()
		for {
			select {
			case <-s.stopc:
				s.tick()
				return
			case <-tk.C:
				s.tick()
			}
		}
	}()
}

func (s *sampler) stop() {
	s.once.Do(func() {
		close(s.stopc)
		<-s.done
		s.close()
	})
}

func (s *sampler) close() {
	for _, d := range s.diag {
		d.Close()
	}
}

type sfKey struct{ local, remote netip.AddrPort }

func (s *sampler) tick() {
	t := time.Since(s.t0).Seconds()
	socks := map[string][]sockdiag.Socket{}
	var bpf map[sfKey]stats.Subflow
	if s.bpf {
		bpf = map[sfKey]stats.Subflow{}
		subs, err := s.ccs.readBPF()
		if err != nil {
			s.errs[err.Error()]++
		}
		for _, sf := range subs {
			bpf[sfKey{sf.Local, sf.Remote}] = sf
		}
	}
	for _, fi := range s.insts {
		initial, recv, active := fi.snapshot()
		if !active {
			continue
		}
		if recv != nil {
			s.goodput = append(s.goodput, report.GoodputSample{T: t, Flow: fi.name, Bytes: recv.Bytes()})
		}
		if !initial.IsValid() {
			continue
		}
		fi.mu.Lock()
		if s.kernel {
			list, ok := socks[fi.ns]
			if !ok {
				var err error
				list, err = s.diag[fi.ns].TCP(unix.AF_INET, sockdiag.Connected)
				if err != nil {
					s.errs[err.Error()]++
				}
				socks[fi.ns] = list
			}
			s.kernelRows(t, fi, initial, list, bpf)
		} else if s.bpf {
			s.bpfRows(t, fi, initial, bpf)
		}
		fi.mu.Unlock()
	}
}

// kernelRows adds the subflows of fi found in the namespace's socket list.
// Called with fi.mu held.
func (s *sampler) kernelRows(t float64, fi *flowInst, initial netip.AddrPort, list []sockdiag.Socket, bpf map[sfKey]stats.Subflow) {
	var group []sockdiag.Socket
	for _, so := range list {
		if so.Local == initial {
			if fi.spec.MPTCP && so.MPTCP && so.Token != 0 {
				fi.token = so.Token
			}
			group = append(group, so) // the initial subflow first: index 0
		}
	}
	if fi.spec.MPTCP && fi.token != 0 {
		for _, so := range list {
			if so.MPTCP && so.Token == fi.token && so.Local != initial {
				group = append(group, so)
			}
		}
	}
	for _, so := range group {
		key := so.Local.String() + ">" + so.Remote.String()
		in := &so.Info
		row := report.SubflowSample{T: t, Flow: fi.name, Subflow: fi.subIndex(key), Path: fi.hostPath[so.Local.Addr()],
			Local: so.Local.String(), Remote: so.Remote.String(), CC: so.CC, Source: "kernel",
			Cwnd: in.Snd_cwnd, Ssthresh: in.Snd_ssthresh, SRTTMs: float64(in.Rtt) / 1000, MinRTTMs: float64(in.Min_rtt) / 1000,
			BytesAcked: in.Bytes_acked, BytesSent: in.Bytes_sent, Retrans: uint64(in.Total_retrans), Lost: uint64(in.Lost),
			InFlight: uint32(max(int64(in.Unacked)-int64(in.Sacked)-int64(in.Lost)+int64(in.Retrans), 0)),
			BusyMs:   float64(in.Busy_time) / 1000, RwndLimitedMs: float64(in.Rwnd_limited) / 1000, SndbufLimitedMs: float64(in.Sndbuf_limited) / 1000}
		if int(in.Ca_state) < len(caNames) {
			row.CAState = caNames[in.Ca_state]
		}
		if in.Min_rtt == ^uint32(0) {
			row.MinRTTMs = 0 // no sample yet
		}
		if stats.SsthreshIsInfinite(row.Ssthresh) {
			row.Ssthresh = 0 // infinite: still in the first slow start
		}
		fi.retrans[key] = uint64(in.Total_retrans)
		if b, ok := bpf[sfKey{so.Local, so.Remote}]; ok {
			row.Source = "both"
			row.Coupled, row.LISAGiven, row.LISATaken, row.Repairs = b.Coupled, b.LISAGiven, b.LISATaken, b.Repairs
			fi.retransB[key] = b.Retrans
		}
		s.samples = append(s.samples, row)
	}
}

// bpfRows is kernelRows from the map alone (our congestion controls only).
func (s *sampler) bpfRows(t float64, fi *flowInst, initial netip.AddrPort, bpf map[sfKey]stats.Subflow) {
	for k, b := range bpf {
		if k.local == initial && b.Token != 0 {
			fi.token = b.Token
		}
	}
	for k, b := range bpf {
		if !(k.local == initial || fi.token != 0 && b.Token == fi.token && b.MPTCP) {
			continue
		}
		key := k.local.String() + ">" + k.remote.String()
		ss := b.Ssthresh
		if stats.SsthreshIsInfinite(ss) {
			ss = 0
		}
		s.samples = append(s.samples, report.SubflowSample{T: t, Flow: fi.name, Subflow: fi.subIndex(key), Path: fi.hostPath[k.local.Addr()],
			Local: k.local.String(), Remote: k.remote.String(), CC: b.CC, Source: "bpf",
			Cwnd: b.Cwnd, Ssthresh: ss, SRTTMs: float64(b.SRTT) / 1e6, MinRTTMs: float64(b.MinRTT) / 1e6,
			BytesAcked: b.BytesAcked, BytesSent: b.BytesSent, Retrans: b.Retrans, Lost: b.Lost, InFlight: b.InFlight,
			CAState: b.CAState, Coupled: b.Coupled, LISAGiven: b.LISAGiven, LISATaken: b.LISATaken, Repairs: b.Repairs})
		fi.retransB[key] = b.Retrans
	}
}
