// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"errors"
	"fmt"
	"time"
)

// DirectionConfig describes one direction of an emulated link. The zero value
// is a perfect link: no delay, no loss, unlimited rate and queue.
type DirectionConfig struct {
	// Rate is the bottleneck rate in bits per second of IP bytes; 0 means
	// unlimited. Must be 0 when Trace is set.
	Rate int64
	// Delay is the one-way propagation delay added after serialization.
	Delay time.Duration
	// Jitter adds a uniform random delay in [0, Jitter) per packet, without
	// ever reordering packets.
	Jitter time.Duration
	// Overhead delays each packet's arrival at the queue by a uniform
	// random time in [0, Overhead), without reordering. It is Floyd and
	// Jacobson's "random overhead" ("On traffic phase effects in
	// packet-switched gateways", 1992): a deterministic drop-tail queue
	// can drop one sender's packets far more often than another's because
	// of where their arrivals fall against its departures, and a random
	// overhead of about one packet's transmission time breaks that.
	Overhead time.Duration
	// Loss is the probability in [0, 1] that a packet is dropped on arrival.
	Loss float64
	// Seed seeds the loss and jitter PRNGs; equal seeds give equal runs.
	Seed uint64
	// QueuePackets and QueueBytes bound the drop-tail bottleneck queue;
	// 0 means unlimited. With an AQM they are its hard limits (0 and 0:
	// the AQM's default, see AQM).
	QueuePackets int
	QueueBytes   int
	// Trace, when set, replaces Rate by a mahimahi delivery trace.
	Trace *Trace
	// AQM selects RED, CoDel or FQ-CoDel for the bottleneck queue; the
	// zero value is the drop-tail queue. It cannot change while a Link
	// runs (SetConfig refuses).
	AQM AQM
}

// Validate reports the first invalid field.
func (c DirectionConfig) Validate() error {
	switch {
	case c.Rate < 0:
		return fmt.Errorf("linkem: negative rate %d", c.Rate)
	case c.Delay < 0:
		return fmt.Errorf("linkem: negative delay %v", c.Delay)
	case c.Jitter < 0:
		return fmt.Errorf("linkem: negative jitter %v", c.Jitter)
	case c.Overhead < 0:
		return fmt.Errorf("linkem: negative overhead %v", c.Overhead)
	case !(c.Loss >= 0 && c.Loss <= 1): // also rejects NaN
		return fmt.Errorf("linkem: loss %v outside [0, 1]", c.Loss)
	case c.QueuePackets < 0 || c.QueueBytes < 0:
		return errors.New("linkem: negative queue limit")
	case c.Trace != nil && c.Rate != 0:
		// Two rate sources would be ambiguous; make the caller pick one.
		return errors.New("linkem: set either Rate or Trace, not both")
	}
	return c.AQM.validate()
}
