// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMTU is the MTU of the TUN devices when PathConfig.MTU is 0.
const DefaultMTU = 1500

// PathConfig describes an emulated point-to-point link between two existing
// network namespaces.
type PathConfig struct {
	Name     string // for error messages only
	NS1, NS2 string // namespace names, as in `ip netns`
	// Dev1 and Dev2 name the TUN devices in NS1 and NS2; neither may exist.
	Dev1, Dev2 string
	// Addr1 and Addr2 are the device addresses with their prefix length,
	// e.g. 10.1.1.1/24 and 10.1.1.2/24; each side routes the other's prefix
	// through its device. Both must be of the same family.
	Addr1, Addr2 netip.Prefix
	MTU          int             // 0 means DefaultMTU
	Forward      DirectionConfig // NS1 -> NS2
	Reverse      DirectionConfig // NS2 -> NS1
}

// Path is a running emulated link.
type Path struct {
	cfg        PathConfig
	fwd, rev   *forwarder
	tun1, tun2 *os.File
	stop       atomic.Bool
	wg         sync.WaitGroup
	closeOnce  sync.Once
}

// Start creates the TUN devices, configures them and starts forwarding. On
// error, everything it created is removed again.
func Start(cfg PathConfig) (*Path, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	now := time.Now()
	fwdLink, err := NewLink(cfg.Forward, now)
	if err != nil {
		return nil, fmt.Errorf("path %s forward: %w", cfg.Name, err)
	}
	revLink, err := NewLink(cfg.Reverse, now)
	if err != nil {
		return nil, fmt.Errorf("path %s reverse: %w", cfg.Name, err)
	}

	p := &Path{cfg: cfg}
	fail := func(err error) (*Path, error) {
		// Closing a TUN file removes its device with addresses and routes.
		if p.tun1 != nil {
			p.tun1.Close()
		}
		if p.tun2 != nil {
			p.tun2.Close()
		}
		return nil, fmt.Errorf("path %s: %w", cfg.Name, err)
	}
	if p.tun1, err = openTUN(cfg.NS1, cfg.Dev1); err != nil {
		return fail(err)
	}
	if p.tun2, err = openTUN(cfg.NS2, cfg.Dev2); err != nil {
		return fail(err)
	}
	if err := configureTUN(cfg.NS1, cfg.Dev1, cfg.MTU, cfg.Addr1, cfg.Addr2); err != nil {
		return fail(err)
	}
	if err := configureTUN(cfg.NS2, cfg.Dev2, cfg.MTU, cfg.Addr2, cfg.Addr1); err != nil {
		return fail(err)
	}

	mtu := cfg.MTU
	pool := &sync.Pool{New: func() any { return &packet{buf: make([]byte, mtu)} }}
	p.fwd = newForwarder(fwdLink, p.tun1, p.tun2, pool, &p.stop)
	p.rev = newForwarder(revLink, p.tun2, p.tun1, pool, &p.stop)
	reserveProcs(p.threads())
	p.fwd.start(&p.wg)
	p.rev.start(&p.wg)
	return p, nil
}

// threads is how many goroutines of the path sleep on their own thread.
func (p *Path) threads() int { return p.fwd.threads() + p.rev.threads() }

func (c PathConfig) validate() error {
	switch {
	case c.NS1 == "" || c.NS2 == "":
		return fmt.Errorf("path %s: both namespaces are required", c.Name)
	case c.Dev1 == "" || c.Dev2 == "":
		return fmt.Errorf("path %s: both device names are required", c.Name)
	case !c.Addr1.IsValid() || !c.Addr2.IsValid():
		return fmt.Errorf("path %s: both addresses are required", c.Name)
	case c.Addr1.Addr().Is4() != c.Addr2.Addr().Is4():
		return fmt.Errorf("path %s: addresses %v and %v are of different families", c.Name, c.Addr1, c.Addr2)
	case c.MTU != 0 && (c.MTU < 576 || c.MTU > 65535):
		return fmt.Errorf("path %s: MTU %d outside [576, 65535]", c.Name, c.MTU)
	}
	return nil
}

// Config returns the configuration the path was started with, with the
// current direction configurations.
func (p *Path) Config() PathConfig {
	c := p.cfg
	c.Forward = p.fwd.link.Config()
	c.Reverse = p.rev.link.Config()
	return c
}

// Stats returns the counters of both directions.
func (p *Path) Stats() (fwd, rev Counters) {
	return p.fwd.link.Stats(), p.rev.link.Stats()
}

// ObserveForward calls o for every packet the forward direction is
// offered, until ObserveForward(nil): a trace of the bottleneck's queue
// for experiments. Jitter makes the departure it reports late by the
// packet's jitter.
func (p *Path) ObserveForward(o Observer) {
	if o == nil {
		p.fwd.observe.Store(nil)
		return
	}
	p.fwd.observe.Store(&o)
}

// SetForward changes the NS1 -> NS2 direction for packets arriving from now.
func (p *Path) SetForward(c DirectionConfig) error { return p.fwd.link.SetConfig(c, time.Now()) }

// SetReverse changes the NS2 -> NS1 direction for packets arriving from now.
func (p *Path) SetReverse(c DirectionConfig) error { return p.rev.link.SetConfig(c, time.Now()) }

// Close stops forwarding, drops the packets still in flight and removes both
// TUN devices. It waits for the forwarding goroutines and is idempotent. The
// error reports a read failure that stopped forwarding early, if any.
func (p *Path) Close() error {
	p.closeOnce.Do(func() {
		p.stop.Store(true)
		// Closing wakes the readers; when they end they close the delay
		// lines, which ends the writers. The devices disappear once the
		// last reference to each file is dropped, i.e. by the time Wait
		// returns.
		p.tun1.Close()
		p.tun2.Close()
		p.wg.Wait()
		releaseProcs(p.threads())
	})
	return errors.Join(p.fwd.err, p.rev.err)
}
