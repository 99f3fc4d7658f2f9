// SPDX-License-Identifier: Apache-2.0

package schedmodel

// Builders for the model tables: a subflow is established, its send
// buffer takes more, MSS 1000 unless a case says otherwise.

type sfOpt func(*Subflow)

func mkSF(id, srttUs, cwnd, inflight uint32, opts ...sfOpt) Subflow {
	f := Subflow{Id: id, Flags: Active | MemFree, SrttUs: srttUs, Cwnd: cwnd, Inflight: inflight, Mss: 1000}
	for _, o := range opts {
		o(&f)
	}
	return f
}

func mss(v uint32) sfOpt     { return func(f *Subflow) { f.Mss = v } }
func notSent(v uint32) sfOpt { return func(f *Subflow) { f.Notsent = v } }
func rttVar(v uint32) sfOpt  { return func(f *Subflow) { f.RttvarUs = v } }
func backup() sfOpt          { return func(f *Subflow) { f.Flags |= Backup } }
func bufferFull() sfOpt      { return func(f *Subflow) { f.Flags &^= MemFree } }
func notEstablished() sfOpt  { return func(f *Subflow) { f.Flags &^= Active } }

func mkConn(sfs ...Subflow) *Conn {
	c := &Conn{N: uint32(len(sfs))}
	copy(c.Sf[:], sfs)
	return c
}
