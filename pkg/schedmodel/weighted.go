// SPDX-License-Identifier: Apache-2.0

package schedmodel

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(algo.Info{ID: 8, Summary: "new data split by operator-given weights per endpoint among the subflows with window space"}, func(a Args) Scheduler { return Weighted{Args: a} })
}

// Weighted mirrors bpf/sched/weighted.bpf.c: new data split in bytes by
// per-endpoint weights among the subflows of the current tier with window
// room, through a zero-sum credit per subflow (the file says why and how).
//
// Weights come from the args: Args[0] is the weight of a subflow whose
// endpoint has none of its own (default 1), Args[e] for e in 1..5 the
// weight of endpoint e (default Args[0]).
type Weighted struct{ Args Args }

// The constants of weighted.bpf.c.
const (
	weightedDefaultWeight  = 1
	weightedNamedEndpoints = 5 // arg1..arg5
	weightedChargeMax      = 256 << 10
	weightedCreditMax      = 1 << 30
	weightedSlot0          = 3
)

func (Weighted) Name() string { return "weighted" }

// Weight is the weight of a subflow from endpoint e.
func (m Weighted) Weight(e uint32) uint64 {
	def := m.Args.get(0, weightedDefaultWeight)
	if e >= 1 && e <= weightedNamedEndpoints {
		return uint64(m.Args.get(int(e), def))
	}
	return uint64(def)
}

func slotID(s *State, i int) uint32 { return uint32(s.W[weightedSlot0+i] >> 32) }

func slotCredit(s *State, i int) int64 { return int64(int32(uint32(s.W[weightedSlot0+i]))) }

func slotSet(s *State, i int, id uint32, credit int64) {
	credit = min(max(credit, -weightedCreditMax), weightedCreditMax)
	s.W[weightedSlot0+i] = uint64(id)<<32 | uint64(uint32(int32(credit)))
}

// weightedAlign carries each subflow's word and room bit to its current
// list position.
func weightedAlign(c *Conn, s *State) {
	var words [MaxSubflows]uint64
	var room uint64
	for i := range MaxSubflows {
		if i >= int(c.N) {
			continue
		}
		id := c.Sf[i].Id
		words[i] = uint64(id) << 32
		for k := range MaxSubflows {
			if slotID(s, k) == id {
				words[i] = s.W[weightedSlot0+k]
				room |= (s.W[2] >> k & 1) << i
			}
		}
	}
	for i := range MaxSubflows {
		s.W[weightedSlot0+i] = words[i]
	}
	s.W[2] = room
}

// charge bills the bytes pushed since the last send decision to the
// subflow picked then, zero-sum over those that had room then.
func (m Weighted) charge(c *Conn, s *State) {
	last := uint32(s.W[1])
	if last == 0 || c.SndNxt <= s.W[0] {
		return
	}
	b := min(c.SndNxt-s.W[0], weightedChargeMax)
	n := min(int(c.N), MaxSubflows)
	had := func(i int) bool { return s.W[2]>>i&1 != 0 }
	found := false
	var total, gained uint64
	for i := range n {
		if c.Sf[i].Id == last {
			found = true
		}
		if c.Sf[i].Id == last || had(i) {
			total += m.Weight(c.Sf[i].Endpoint)
		}
	}
	if !found || total == 0 {
		return
	}
	for i := range n {
		if c.Sf[i].Id == last || !had(i) {
			continue
		}
		gain := b * m.Weight(c.Sf[i].Endpoint) / total
		slotSet(s, i, c.Sf[i].Id, slotCredit(s, i)+int64(gain))
		gained += gain
	}
	for i := range n {
		if c.Sf[i].Id == last {
			slotSet(s, i, last, slotCredit(s, i)-int64(gained))
		}
	}
}

func (m Weighted) Send(c *Conn, s *State) Out {
	var o Out
	weightedAlign(c, s)
	m.charge(c, s)
	t := tier(c)
	best := -1
	var bestCredit int64
	var room uint64
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		f := &c.Sf[i]
		if !inTier(f, t) || space(f) == 0 {
			continue
		}
		room |= 1 << i
		if cr := slotCredit(s, i); best < 0 || cr > bestCredit {
			best, bestCredit = i, cr
		}
	}
	s.W[0] = c.SndNxt
	s.W[1] = 0
	if best >= 0 {
		s.W[1] = uint64(c.Sf[best].Id)
	}
	s.W[2] = room
	choose(c, best, &o)
	return o
}

func (Weighted) Retrans(c *Conn, _ *State) Out { return retransOnBest(c) }
