// SPDX-License-Identifier: Apache-2.0

package schedmodel

import (
	"fmt"

	"github.com/mptcp-cc/mptcp-cc/pkg/algo"
)

// register adds a scheduler to the table (pkg/algo), named by its model,
// from the init of the model's file: the one place a scheduler is
// declared. i.ID is stable once shipped (pkg/algo says why).
func register(i algo.Info, model func(Args) Scheduler) {
	i.Name, i.Kind, i.Model = model(Args{}).Name(), algo.Scheduler, model
	algo.Register(i)
}

// Of returns the model of a scheduler of the table with its load-time args.
func Of(i algo.Info, args Args) Scheduler { return i.Model.(func(Args) Scheduler)(args) }

// New returns the model of the named scheduler with its load-time args.
func New(name string, args Args) (Scheduler, error) {
	i, err := algo.Lookup(algo.Scheduler, name)
	if err != nil {
		return nil, fmt.Errorf("no model: %w", err)
	}
	return Of(i, args), nil
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
