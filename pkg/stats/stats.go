// SPDX-License-Identifier: Apache-2.0

// Package stats turns the per-subflow BPF map (struct mpcc_subflow in
// bpf/include/cc_types.h) into typed records, one per live subflow.
package stats

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"time"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

const afInet6 = 10

// Subflow is one live subflow as the congestion control sees it.
type Subflow struct {
	CC        string `json:"cc"`   // registered name, e.g. mptcp_olia
	Algo      string `json:"algo"` // algorithm, e.g. olia
	ID        uint64 `json:"id"`   // mptcp-cc's id, unique while the subflow lives
	Token     uint32 `json:"token"`
	SubflowID uint32 `json:"subflow_id"` // the kernel's id within the connection
	LocalID   uint8  `json:"local_id"`   // address ids, as the path manager names them
	RemoteID  uint8  `json:"remote_id"`
	MPTCP     bool   `json:"mptcp"`
	// Backup: this side flagged the subflow backup. The map records it as
	// the subflow starts; JoinKernel (Pinned.LiveFlags) replaces it with
	// the kernel's view now (MP_PRIO and endpoint flags change it later).
	Backup bool `json:"backup"`
	// BackupRemote: the peer flagged it backup (JoinKernel only).
	BackupRemote bool `json:"backup_remote"`
	// Paced: the kernel paces the subflow (its own TCP pacing, which the
	// congestion control asked for, or an fq qdisc's).
	Paced bool `json:"paced"`

	Local  netip.AddrPort `json:"local"`
	Remote netip.AddrPort `json:"remote"`

	Cwnd        uint32        `json:"cwnd_segments"`
	Ssthresh    uint32        `json:"ssthresh_segments"`
	SRTT        time.Duration `json:"srtt_ns"`
	RTTVar      time.Duration `json:"rttvar_ns"`
	MinRTT      time.Duration `json:"min_rtt_ns"`
	CAState     string        `json:"ca_state"`
	InFlight    uint32        `json:"in_flight_segments"`
	Paths       uint32        `json:"coupled_paths"`
	Delivered   uint64        `json:"delivered_segments"`
	Lost        uint64        `json:"lost_segments"`
	Retrans     uint64        `json:"retrans_segments"`
	BytesAcked  uint64        `json:"bytes_acked"`
	BytesSent   uint64        `json:"bytes_sent"`
	PacingRate  uint64        `json:"pacing_rate_bytes_per_second"`
	Coupled     float64       `json:"coupled"`
	CoupledName string        `json:"coupled_name"`
	LISAGiven   uint32        `json:"lisa_given_segments"`
	LISATaken   uint32        `json:"lisa_taken_segments"`
	// Repairs counts implausible windows the kernel stored that the
	// congestion control replaced (docs/algorithms.md, "The window guard").
	Repairs   uint32 `json:"window_repairs"`
	UpdatedNs uint64 `json:"updated_monotonic_ns"`
	// Sched is what a loaded packet scheduler of mptcp-cc gave the subflow
	// (nil when none schedules its connection, or the source reads none).
	Sched *SchedCounters `json:"scheduler,omitempty"`
	// Record is the BPF record the fields above were decoded from, as
	// pkg/abi generates it from struct mpcc_subflow: a reader that needs a
	// field of the record reads it here, so a field added in C needs no
	// field added by hand above (pkg/metrics' table reads new ones so).
	// Nil for subflows that did not come from a subflows map. A pointer,
	// so that sorting and copying subflows does not move the record too.
	Record *abi.Subflow `json:"-"`
}

// InfiniteSsthresh is the kernel's TCP_INFINITE_SSTHRESH: a subflow still
// in its first slow start has no threshold yet.
const InfiniteSsthresh = 0x7fffffff

// SsthreshIsInfinite reports whether a slow-start threshold (from the map or
// from tcp_info) is the kernel's "none yet".
func SsthreshIsInfinite(v uint32) bool { return v >= InfiniteSsthresh }

// FormatSsthresh is how tables show a threshold: "inf" when infinite.
func FormatSsthresh(v uint32) string {
	if SsthreshIsInfinite(v) {
		return "inf"
	}
	return strconv.FormatUint(uint64(v), 10)
}

var caStates = []string{"open", "disorder", "cwr", "recovery", "loss"}

// decode converts a value of the subflows map (struct mpcc_subflow). algo
// and coupledName name the algorithm (the BPF side only knows its
// numeric id).
func decode(r *abi.Subflow, cc, algo, coupledName string) Subflow {
	s := Subflow{
		CC: cc, Algo: algo, ID: r.Id, Token: r.Token, SubflowID: r.SubflowId,
		LocalID: r.LocalId, RemoteID: r.RemoteId,
		MPTCP: r.Flags&abi.SubflowMPTCP != 0, Backup: r.Flags&abi.SubflowBackup != 0, Paced: r.Flags&abi.SubflowPaced != 0,
		Cwnd: r.Cwnd, Ssthresh: r.Ssthresh,
		SRTT:     time.Duration(r.SrttUs) * time.Microsecond,
		RTTVar:   time.Duration(r.RttvarUs) * time.Microsecond,
		MinRTT:   time.Duration(r.MinRttUs) * time.Microsecond,
		InFlight: r.InFlight, Paths: r.Npaths, Delivered: r.Delivered, Lost: r.Lost,
		Retrans: r.Retrans, BytesAcked: r.BytesAcked, BytesSent: r.BytesSent,
		PacingRate: r.PacingRate, Coupled: float64(r.Coupled) / (1 << 32), // Q32
		CoupledName: coupledName, LISAGiven: r.LisaGiven, LISATaken: r.LisaTaken,
		Repairs: r.Repairs, UpdatedNs: r.UpdatedNs, Record: r,
	}
	if int(r.CaState) < len(caStates) {
		s.CAState = caStates[r.CaState]
	} else {
		s.CAState = fmt.Sprint(r.CaState)
	}
	if r.Family == afInet6 {
		s.Local = netip.AddrPortFrom(netip.AddrFrom16(r.Saddr).Unmap(), r.Sport)
		s.Remote = netip.AddrPortFrom(netip.AddrFrom16(r.Daddr).Unmap(), r.Dport)
	} else {
		s.Local = netip.AddrPortFrom(netip.AddrFrom4([4]byte(r.Saddr[:4])), r.Sport)
		s.Remote = netip.AddrPortFrom(netip.AddrFrom4([4]byte(r.Daddr[:4])), r.Dport)
	}
	return s
}

// readMap returns every subflow in one subflows map. It is the only place
// that iterates the map: everything else reads through a Source. It reads
// in batches, a syscall per batchSize entries (with 10,000 subflows,
// element by element took two syscalls each and 50 ms on our test host),
// and element by element where the kernel has no batch lookups.
func readMap(m *ebpf.Map, cc, algo, coupledName string) ([]Subflow, error) {
	keys := make([]uint64, batchSize)
	vals := make([]abi.Subflow, batchSize)
	var (
		cursor ebpf.MapBatchCursor
		out    []Subflow
	)
	for {
		n, err := m.BatchLookup(&cursor, keys, vals, nil)
		// The subflows keep their records: one allocation per batch, of
		// what it returned (vals is reused).
		recs := append([]abi.Subflow(nil), vals[:n]...)
		for i := range recs {
			out = append(out, decode(&recs[i], cc, algo, coupledName))
		}
		switch {
		case errors.Is(err, ebpf.ErrKeyNotExist):
			return out, nil // the last batch
		case errors.Is(err, ebpf.ErrNotSupported) && out == nil:
			return readMapByElement(m, cc, algo, coupledName)
		case err != nil:
			return out, err
		}
	}
}

// batchSize is how many entries one batch lookup asks for.
const batchSize = 1024

func readMapByElement(m *ebpf.Map, cc, algo, coupledName string) ([]Subflow, error) {
	var (
		key uint64
		raw = new(abi.Subflow)
		out []Subflow
	)
	it := m.Iterate()
	for it.Next(&key, raw) {
		out = append(out, decode(raw, cc, algo, coupledName))
		raw = new(abi.Subflow) // the subflow keeps the last one
	}
	if err := it.Err(); err != nil && !errors.Is(err, ebpf.ErrIterationAborted) {
		return out, err
	}
	return out, nil
}

func sortLoaded(l []cc.Loaded) {
	sort.Slice(l, func(i, j int) bool { return l[i].Name < l[j].Name })
}

// Sort orders subflows by connection token, then kernel subflow id, so
// tables stay stable from one refresh to the next.
func Sort(s []Subflow) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Token != s[j].Token {
			return s[i].Token < s[j].Token
		}
		if s[i].SubflowID != s[j].SubflowID {
			return s[i].SubflowID < s[j].SubflowID
		}
		return s[i].ID < s[j].ID
	})
}
