// SPDX-License-Identifier: Apache-2.0

package schedmodel

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(algo.Info{ID: 7, Summary: "measured rates choose multipath or the best path alone, per period (draft-zuo-mptcp-degradation)"}, func(a Args) Scheduler { return NewPAPD(a) })
}

// PAPD mirrors bpf/sched/papd.bpf.c: measured rates choose, per period,
// multipath (minrtt over every subflow) or the best path alone; redundant
// marking while the connection is in slow start.
type PAPD struct {
	Period uint32 // congestion-avoidance period, in RTT_max (arg0)
	Gain   uint32 // multipath wins when aggregate*1024 >= T'*Gain (arg1)
	Probe  uint32 // BEST periods between multipath re-probes (arg2)
}

// Modes (state word 0).
const (
	PAPDRedundant = 1
	PAPDMP        = 2
	PAPDBest      = 3
)

// The state words of papd.bpf.c.
const (
	PAPDWMode    = 0
	PAPDWBest    = 1
	PAPDWBestN   = 2
	PAPDWStart   = 3
	PAPDWUna     = 4
	PAPDWAgg     = 5
	PAPDWFullBW  = 6
	PAPDWFullCnt = 7
	PAPDWSlot    = 8
)

// The constants of papd.bpf.c.
const (
	papdPeriodDef  = 4
	papdGainDef    = 1024
	papdProbeDef   = 8
	papdOne        = 1024
	papdFullGrowth = 1280
	papdFullRounds = 3
	PAPDRateShift  = 10
	PAPDRateMax    = 1<<22 - 1
	papdDlvMask    = 0xfff
	papdBytesCap   = 1 << 43
	papdAggCap     = 1 << 40
	papdGainCap    = 1 << 20
	papdSlots      = 8
)

// NewPAPD reads papd's tunables.
func NewPAPD(a Args) PAPD {
	return PAPD{Period: a.get(0, papdPeriodDef), Gain: a.get(1, papdGainDef), Probe: a.get(2, papdProbeDef)}
}

func (PAPD) Name() string { return "papd" }

// PAPDSlot packs one filter slot as papd.bpf.c does.
func PAPDSlot(key, dlv, cur, prev uint64) uint64 {
	return key<<56 | (dlv&papdDlvMask)<<44 | cur<<22 | prev
}

func slotKey(w uint64) uint64  { return w >> 56 }
func slotDlv(w uint64) uint64  { return (w >> 44) & papdDlvMask }
func slotCur(w uint64) uint64  { return (w >> 22) & PAPDRateMax }
func slotPrev(w uint64) uint64 { return w & PAPDRateMax }

// PAPDKey is the slot key of a subflow id.
func PAPDKey(id uint32) uint64 { return uint64(id%255 + 1) }

func perSec(bytes, us uint64) uint64 {
	if us == 0 {
		return 0
	}
	return min(bytes, papdBytesCap) * 1000000 / us
}

// PAPDSample is papd_sample: the last delivery-rate sample in filter units.
func PAPDSample(f *Subflow) uint64 {
	return min(perSec(uint64(f.RateDelivered)*uint64(f.Mss), uint64(f.RateIntervalUs))>>PAPDRateShift, PAPDRateMax)
}

func papdFilter(c *Conn, s *State) {
	for j := 0; j < papdSlots; j++ {
		key := slotKey(s.W[PAPDWSlot+j])
		if key == 0 {
			continue
		}
		present := false
		for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
			if PAPDKey(c.Sf[i].Id) == key {
				present = true
			}
		}
		if !present {
			s.W[PAPDWSlot+j] = 0
		}
	}
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		f := &c.Sf[i]
		if f.RateIntervalUs == 0 {
			continue
		}
		key := PAPDKey(f.Id)
		at, free := -1, -1
		for j := 0; j < papdSlots; j++ {
			k := slotKey(s.W[PAPDWSlot+j])
			if k == key && at < 0 {
				at = j
			}
			if k == 0 && free < 0 {
				free = j
			}
		}
		if at < 0 {
			at = free
			if at < 0 {
				continue
			}
			s.W[PAPDWSlot+at] = PAPDSlot(key, ^f.Delivered, 0, 0)
		}
		w := s.W[PAPDWSlot+at]
		if slotDlv(w) == f.Delivered&papdDlvMask {
			continue
		}
		cur := max(PAPDSample(f), slotCur(w))
		s.W[PAPDWSlot+at] = PAPDSlot(key, f.Delivered, cur, slotPrev(w))
	}
}

func papdRotate(s *State) {
	for j := 0; j < papdSlots; j++ {
		if w := s.W[PAPDWSlot+j]; slotKey(w) != 0 {
			s.W[PAPDWSlot+j] = PAPDSlot(slotKey(w), slotDlv(w), 0, slotCur(w))
		}
	}
}

// PAPDRate is papd_rate: the filtered delivery rate of subflow id, bytes/s.
func PAPDRate(s *State, id uint32) uint64 {
	key := PAPDKey(id)
	for j := 0; j < papdSlots; j++ {
		if w := s.W[PAPDWSlot+j]; slotKey(w) == key {
			return max(slotCur(w), slotPrev(w)) << PAPDRateShift
		}
	}
	return 0
}

func papdBest(c *Conn, s *State) int {
	t, best, bestRate, bestRTT := tier(c), -1, uint64(0), uint32(0)
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		f := &c.Sf[i]
		if !inTier(f, t) {
			continue
		}
		r := PAPDRate(s, f.Id)
		if best < 0 || r > bestRate || r == bestRate && f.SrttUs < bestRTT {
			best, bestRate, bestRTT = i, r, f.SrttUs
		}
	}
	return best
}

func papdRTTMax(c *Conn) (m uint32, ss bool) {
	t := tier(c)
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		f := &c.Sf[i]
		if !inTier(f, t) {
			continue
		}
		m = max(m, f.SrttUs)
		ss = ss || f.Flags&SlowStart != 0
	}
	return m, ss
}

func papdNewPeriod(c *Conn, s *State) {
	s.W[PAPDWStart] = c.NowUs
	s.W[PAPDWUna] = c.SndUna
	papdRotate(s)
}

func papdFind(c *Conn, id uint64) int {
	t := tier(c)
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		f := &c.Sf[i]
		if uint64(f.Id) == id && f.Flags&Active != 0 && f.Flags&Backup == t {
			return i
		}
	}
	return -1
}

func papdAll(c *Conn, needSpace bool) Out {
	var o Out
	t := tier(c)
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		f := &c.Sf[i]
		room := space(f)
		if !inTier(f, t) || needSpace && room == 0 {
			continue
		}
		room = max(room, f.Mss)
		if o.Mask == 0 || room < o.Burst {
			o.Burst = room
		}
		o.Mask |= 1 << i
	}
	return o
}

func (m PAPD) decide(c *Conn, s *State) {
	var una uint64
	if c.SndUna > s.W[PAPDWUna] {
		una = c.SndUna - s.W[PAPDWUna]
	}
	agg := min(perSec(una, c.NowUs-s.W[PAPDWStart]), papdAggCap)
	s.W[PAPDWAgg] = agg
	if s.W[PAPDWMode] == PAPDRedundant {
		if agg*papdOne >= s.W[PAPDWFullBW]*papdFullGrowth {
			s.W[PAPDWFullBW] = agg
			s.W[PAPDWFullCnt] = 0
		} else if s.W[PAPDWFullCnt]++; s.W[PAPDWFullCnt] >= papdFullRounds {
			s.W[PAPDWMode] = PAPDMP
		}
		return
	}
	b := papdBest(c, s)
	if b < 0 {
		s.W[PAPDWMode] = PAPDMP
		return
	}
	if s.W[PAPDWMode] == PAPDBest {
		s.W[PAPDWBest] = uint64(c.Sf[b].Id)
		if s.W[PAPDWBestN]++; s.W[PAPDWBestN] >= uint64(m.Probe) {
			s.W[PAPDWMode] = PAPDMP
			s.W[PAPDWBestN] = 0
		}
		return
	}
	if agg*papdOne >= PAPDRate(s, c.Sf[b].Id)*uint64(min(m.Gain, papdGainCap)) {
		return
	}
	s.W[PAPDWMode] = PAPDBest
	s.W[PAPDWBest] = uint64(c.Sf[b].Id)
	s.W[PAPDWBestN] = 0
}

func (m PAPD) update(c *Conn, s *State) {
	rttMax, ss := papdRTTMax(c)
	papdFilter(c, s)
	ss = ss && s.W[PAPDWFullCnt] < papdFullRounds
	if s.W[PAPDWMode] == 0 {
		s.W[PAPDWMode] = PAPDMP
		if ss {
			s.W[PAPDWMode] = PAPDRedundant
		} else {
			s.W[PAPDWFullCnt] = papdFullRounds
		}
		s.W[PAPDWStart] = c.NowUs
		s.W[PAPDWUna] = c.SndUna
		return
	}
	if s.W[PAPDWMode] == PAPDRedundant && !ss {
		s.W[PAPDWMode] = PAPDMP
		s.W[PAPDWFullCnt] = papdFullRounds
		papdNewPeriod(c, s)
		return
	}
	length := uint64(1)
	if s.W[PAPDWMode] != PAPDRedundant {
		length = uint64(m.Period)
	}
	if rttMax == 0 || c.NowUs-s.W[PAPDWStart] < length*uint64(rttMax) {
		return
	}
	m.decide(c, s)
	papdNewPeriod(c, s)
}

func (m PAPD) Send(c *Conn, s *State) Out {
	var o Out
	m.update(c, s)
	switch s.W[PAPDWMode] {
	case PAPDRedundant:
		return papdAll(c, true)
	case PAPDBest:
		if b := papdFind(c, s.W[PAPDWBest]); b >= 0 {
			if usable(&c.Sf[b]) && space(&c.Sf[b]) > 0 {
				choose(c, b, &o)
			}
			return o
		}
	}
	choose(c, lowestRTT(c, true), &o)
	return o
}

func (m PAPD) Retrans(c *Conn, s *State) Out {
	var o Out
	switch s.W[PAPDWMode] {
	case PAPDRedundant:
		return papdAll(c, false)
	case PAPDBest:
		if b := papdFind(c, s.W[PAPDWBest]); b >= 0 && usable(&c.Sf[b]) {
			choose(c, b, &o)
			return o
		}
	}
	return retransOnBest(c)
}
