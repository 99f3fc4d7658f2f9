// SPDX-License-Identifier: Apache-2.0

package policy

// The rules map's key and value: how a Rule is encoded for the BPF program
// (bpf/policy.bpf.c) and decoded back for List.

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// value validates a rule and returns its map value (without an id).
func (r Rule) value() (policyRule, error) {
	var v policyRule
	if err := validCCName(r.CC); err != nil {
		return v, err
	}
	if r.Dst.IsValid() && r.Dst != r.Dst.Masked() {
		return v, fmt.Errorf("%w: destination %s has bits set beyond its prefix length; did you mean %s?", ErrInvalidRule, r.Dst, r.Dst.Masked())
	}
	for i := 0; i < len(r.CC); i++ {
		v.Cc[i] = int8(r.CC[i])
	}
	v.AddrBits = uint32(r.addrBits())
	if r.PlainTCP {
		v.PlainTcp = 1
	}
	if r.DelackMax != 0 {
		if err := validDelack(r.DelackMax, kernel.HZ()); err != nil {
			return v, err
		}
		v.DelackMaxUs = uint32(r.DelackMax / time.Microsecond)
	}
	return v, nil
}

// The kernel's bounds of TCP_BPF_DELACK_MAX: two ticks (TCP_TIMEOUT_MIN)
// to TCP_DELACK_MAX, a fifth of a second.
const delackCeiling = 200 * time.Millisecond

// CheckDelackMax says whether the running kernel takes d as a rule's
// delayed-ACK cap (Rule.DelackMax), and if not, what it takes.
func CheckDelackMax(d time.Duration) error { return validDelack(d, kernel.HZ()) }

// validDelack checks a delayed-ACK cap against the kernel's bounds; hz is
// the kernel's tick rate (0: unknown, so the floor is 1 ms and the kernel
// counts a cap below its two ticks as an error).
func validDelack(d time.Duration, hz int) error {
	floor, why := time.Millisecond, "at least two of the kernel's ticks, whose rate (CONFIG_HZ) is not known here"
	if hz > 0 {
		floor, why = max(floor, 2*time.Second/time.Duration(hz)), fmt.Sprintf("two of its ticks at HZ=%d", hz)
	}
	if d < floor || d > delackCeiling {
		return fmt.Errorf("%w: delayed-ACK cap %v is outside what the kernel takes, %v (%s) to %v (TCP_DELACK_MAX)",
			ErrInvalidRule, d, floor, why, delackCeiling)
	}
	return nil
}

// addrBits is the rule's prefix length in the IPv6 space, where IPv4 is
// mapped (::ffff:0:0/96).
func (r Rule) addrBits() int {
	if !r.Dst.IsValid() {
		return 0
	}
	if r.Dst.Addr().Is4() {
		return 96 + r.Dst.Bits()
	}
	return r.Dst.Bits()
}

func (r Rule) key(kind uint8) policyRuleKey {
	k := policyRuleKey{Prefixlen: uint32(32 + r.addrBits()), Kind: kind}
	if r.DstPort != 0 {
		k.HasPort = 1
		k.Port = r.DstPort
	}
	if r.Dst.IsValid() {
		k.Addr = netip.AddrFrom16(r.Dst.Addr().As16()).As16()
	}
	return k
}

func decode(k policyRuleKey, v policyRule) RuleInfo {
	info := RuleInfo{ID: v.Id, DstPort: k.Port, PlainTCP: v.PlainTcp != 0, Applied: v.Applied,
		DelackMax: time.Duration(v.DelackMaxUs) * time.Microsecond}
	info.CC = kernel.CString(v.Cc[:])
	bits := int(k.Prefixlen) - 32
	if bits > 0 {
		a := netip.AddrFrom16(k.Addr)
		if bits >= 96 && a.Is4In6() {
			info.Dst = netip.PrefixFrom(a.Unmap(), bits-96)
		} else {
			info.Dst = netip.PrefixFrom(a, bits)
		}
	}
	return info
}

// String formats a rule the way the CLI takes it.
func (r RuleInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", r.CC)
	if r.Dst.IsValid() {
		fmt.Fprintf(&b, " dst %s", r.Dst)
	}
	if r.DstPort != 0 {
		fmt.Fprintf(&b, " dport %d", r.DstPort)
	}
	if r.PlainTCP {
		b.WriteString(" +tcp")
	}
	if r.DelackMax != 0 {
		fmt.Fprintf(&b, " delack-max %v", r.DelackMax)
	}
	return b.String()
}
