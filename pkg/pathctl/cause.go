// SPDX-License-Identifier: Apache-2.0

package pathctl

import "strings"

// Causes of a reported decision: a small, fixed set, so metrics can label
// switches by it (Cause).
const (
	CauseTrial    = "trial"    // a hold ended: the other mode is tried
	CauseDegraded = "degraded" // the held mode lost half its goodput: the other is tried early
	CauseChosen   = "chosen"   // a trial ended and its mode won (no flag changes)
	CauseKept     = "kept"     // a trial ended and lost: back to the mode held before
	CauseStall    = "stall"    // a subflow stalled with data queued
	CauseClosed   = "closed"   // the best path closed, or fewer than two subflows are left
)

// Causes lists every value Cause returns.
var Causes = []string{CauseTrial, CauseDegraded, CauseChosen, CauseKept, CauseStall, CauseClosed}

// Cause names why the engine reported d (a decision that switched or ended
// a trial); "" for one that did neither. The engine says why in prose
// (Decision.Reason); this maps its reasons onto Causes, and
// TestCauseOfEveryReason drives the engine through each so that a reworded
// reason fails there rather than mislabelling switches.
func Cause(d Decision) string {
	switch {
	case d.Chosen && d.Switched:
		return CauseKept
	case d.Chosen:
		return CauseChosen
	case !d.Switched:
		return ""
	case strings.HasPrefix(d.Reason, "stall"):
		return CauseStall
	case strings.HasPrefix(d.Reason, BestPath.String()+" degraded"), strings.HasPrefix(d.Reason, Multipath.String()+" degraded"):
		return CauseDegraded
	case strings.HasPrefix(d.Reason, "trial of"):
		return CauseTrial
	}
	// "best path closed", "fewer than two subflows": a subflow went away.
	return CauseClosed
}
