// SPDX-License-Identifier: Apache-2.0

package schedmodel

import "fmt"

// New returns the model of the named scheduler with its load-time args.
func New(name string, args Args) (Scheduler, error) {
	switch name {
	case "minrtt":
		return MinRTT{}, nil
	case "rr":
		return RR{Packets: args.get(0, 1)}, nil
	case "redundant":
		return Redundant{}, nil
	case "blest":
		return BLEST{Lambda: args.get(0, 120)}, nil
	case "ecf":
		return ECF{}, nil
	case "daps":
		return NewDAPS(args), nil
	case "papd":
		return NewPAPD(args), nil
	case "weighted":
		return Weighted{Args: args}, nil
	}
	return nil, fmt.Errorf("no model of scheduler %q", name)
}

// Replay runs one traced decision through m from its recorded inputs and
// state, and returns what the model decided and the state it left.
func Replay(m Scheduler, t Trace) (Out, State) {
	c, s := t.Conn, t.Before
	var o Out
	if c.Retrans != 0 {
		o = m.Retrans(&c, &s)
	} else {
		o = m.Send(&c, &s)
	}
	o.Mask &= 1<<c.N - 1
	return o, s
}
