package schedmodel

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
	weightedNamedEndpoints = 5
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

func slotID(s *State, k int) uint32 { return uint32(s.W[weightedSlot0+k] >> 32) }

func slotCredit(s *State, k int) int64 { return int64(int32(uint32(s.W[weightedSlot0+k]))) }

func slotSet(s *State, k int, id uint32, credit int64) {
	credit = min(max(credit, -weightedCreditMax), weightedCreditMax)
	s.W[weightedSlot0+k] = uint64(id)<<32 | uint64(uint32(int32(credit)))
}

// slots frees the slots of subflows that left and gives each subflow its
// slot (-1 only if none is free, which 8 slots for 8 subflows rule out).
func weightedSlots(c *Conn, s *State) [MaxSubflows]int {
	n := min(int(c.N), MaxSubflows)
	for k := range MaxSubflows {
		id := slotID(s, k)
		if id == 0 {
			continue
		}
		here := false
		for i := range n {
			if c.Sf[i].Id == id {
				here = true
			}
		}
		if !here {
			s.W[weightedSlot0+k] = 0
			s.W[2] &^= 1 << k
		}
	}
	var slot [MaxSubflows]int
	for i := range n {
		found, free := -1, -1
		for k := range MaxSubflows {
			id := slotID(s, k)
			if id != 0 && id == c.Sf[i].Id {
				found = k
			}
			if id == 0 && free < 0 {
				free = k
			}
		}
		if found < 0 && free >= 0 {
			slotSet(s, free, c.Sf[i].Id, 0)
			found = free
		}
		slot[i] = found
	}
	return slot
}

// charge bills the bytes pushed since the last send decision to the
// subflow picked then, zero-sum over those that had room then.
func (m Weighted) charge(c *Conn, s *State, slot [MaxSubflows]int) {
	if s.W[1] == 0 || c.SndNxt <= s.W[0] {
		return
	}
	b := min(c.SndNxt-s.W[0], weightedChargeMax)
	n := min(int(c.N), MaxSubflows)
	lastID := uint32(s.W[1])
	last := -1
	var total, gained uint64
	for i := range n {
		k := slot[i]
		if k < 0 {
			continue
		}
		if c.Sf[i].Id == lastID {
			last = i
		}
		if c.Sf[i].Id == lastID || s.W[2]&(1<<k) != 0 {
			total += m.Weight(c.Sf[i].Endpoint)
		}
	}
	if last < 0 || total == 0 {
		return
	}
	for i := range n {
		k := slot[i]
		if i == last || k < 0 || s.W[2]&(1<<k) == 0 {
			continue
		}
		gain := b * m.Weight(c.Sf[i].Endpoint) / total
		slotSet(s, k, c.Sf[i].Id, slotCredit(s, k)+int64(gain))
		gained += gain
	}
	if k := slot[last]; k >= 0 {
		slotSet(s, k, c.Sf[last].Id, slotCredit(s, k)-int64(gained))
	}
}

func (m Weighted) Send(c *Conn, s *State) Out {
	var o Out
	slot := weightedSlots(c, s)
	m.charge(c, s, slot)
	t := tier(c)
	best := -1
	var bestCredit int64
	var room uint64
	for i := 0; i < int(c.N) && i < MaxSubflows; i++ {
		f := &c.Sf[i]
		k := slot[i]
		if k < 0 || !inTier(f, t) || space(f) == 0 {
			continue
		}
		room |= 1 << k
		if cr := slotCredit(s, k); best < 0 || cr > bestCredit {
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
