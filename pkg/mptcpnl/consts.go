// SPDX-License-Identifier: Apache-2.0

package mptcpnl

// The numeric values below are kernel ABI. Each block says where it comes
// from; all of them were checked on the build machine against
// /usr/include/linux/mptcp.h (linux-libc-dev 6.1) and against the enums in the
// running kernel's BTF (Linux 6.18: `bpftool btf dump file
// /sys/kernel/btf/vmlinux format c | grep MPTCP_`). Since Linux 6.7 the
// commands and attributes live in include/uapi/linux/mptcp_pm.h, generated
// from Documentation/netlink/specs/mptcp_pm.yaml; the values did not change.

// Generic netlink family identity: MPTCP_PM_NAME, MPTCP_PM_VER and
// MPTCP_PM_EV_GRP_NAME in include/uapi/linux/mptcp.h (#defines, so not in
// BTF; identical in the 6.1 header and upstream 6.18). The family ID and the
// group ID are assigned at boot and are looked up at run time.
const (
	familyName    = "mptcp_pm"
	familyVersion = 1
	eventGroup    = "mptcp_pm_events"
)

// Commands: enum MPTCP_PM_CMD_* (6.1 header == 6.18 BTF). ANNOUNCE, REMOVE,
// SUBFLOW_CREATE and SUBFLOW_DESTROY belong to the userspace path manager
// and are not wrapped by this package yet.
const (
	cmdAddAddr        uint8 = 1  // MPTCP_PM_CMD_ADD_ADDR
	cmdDelAddr        uint8 = 2  // MPTCP_PM_CMD_DEL_ADDR
	cmdGetAddr        uint8 = 3  // MPTCP_PM_CMD_GET_ADDR
	cmdFlushAddrs     uint8 = 4  // MPTCP_PM_CMD_FLUSH_ADDRS
	cmdSetLimits      uint8 = 5  // MPTCP_PM_CMD_SET_LIMITS
	cmdGetLimits      uint8 = 6  // MPTCP_PM_CMD_GET_LIMITS
	cmdSetFlags       uint8 = 7  // MPTCP_PM_CMD_SET_FLAGS
	cmdAnnounce       uint8 = 8  // MPTCP_PM_CMD_ANNOUNCE
	cmdRemove         uint8 = 9  // MPTCP_PM_CMD_REMOVE
	cmdSubflowCreate  uint8 = 10 // MPTCP_PM_CMD_SUBFLOW_CREATE
	cmdSubflowDestroy uint8 = 11 // MPTCP_PM_CMD_SUBFLOW_DESTROY
)

// Top-level request/reply attributes: enum MPTCP_PM_ATTR_* (6.1 header ==
// 6.18 BTF). 6.18 also names attribute 1 MPTCP_PM_ENDPOINT_ADDR in the
// get-addr request; it has the same value as MPTCP_PM_ATTR_ADDR.
const (
	attrAddr        uint16 = 1 // MPTCP_PM_ATTR_ADDR, nested MPTCP_PM_ADDR_ATTR_*
	attrRcvAddAddrs uint16 = 2 // MPTCP_PM_ATTR_RCV_ADD_ADDRS, u32
	attrSubflows    uint16 = 3 // MPTCP_PM_ATTR_SUBFLOWS, u32
	attrToken       uint16 = 4 // MPTCP_PM_ATTR_TOKEN, u32
	attrLocID       uint16 = 5 // MPTCP_PM_ATTR_LOC_ID, u8
	attrAddrRemote  uint16 = 6 // MPTCP_PM_ATTR_ADDR_REMOTE, nested
)

// Attributes nested in attrAddr: enum MPTCP_PM_ADDR_ATTR_* (6.1 header ==
// 6.18 BTF). Unlike the event attributes, PORT is in host byte order here
// (the kernel uses nla_get_u16/nla_put_u16 and converts itself).
const (
	addrAttrFamily uint16 = 1 // MPTCP_PM_ADDR_ATTR_FAMILY, u16
	addrAttrID     uint16 = 2 // MPTCP_PM_ADDR_ATTR_ID, u8
	addrAttrAddr4  uint16 = 3 // MPTCP_PM_ADDR_ATTR_ADDR4, struct in_addr
	addrAttrAddr6  uint16 = 4 // MPTCP_PM_ADDR_ATTR_ADDR6, struct in6_addr
	addrAttrPort   uint16 = 5 // MPTCP_PM_ADDR_ATTR_PORT, u16 host order
	addrAttrFlags  uint16 = 6 // MPTCP_PM_ADDR_ATTR_FLAGS, u32
	addrAttrIfIdx  uint16 = 7 // MPTCP_PM_ADDR_ATTR_IF_IDX, s32
)

// Event attributes: enum mptcp_event_attr (6.1 header == 6.18 BTF). Types
// are from the header comments and net/mptcp/pm_netlink.c: addresses and
// ports are in network byte order, everything else in host order.
const (
	evAttrToken       uint16 = 1  // MPTCP_ATTR_TOKEN, u32
	evAttrFamily      uint16 = 2  // MPTCP_ATTR_FAMILY, u16
	evAttrLocID       uint16 = 3  // MPTCP_ATTR_LOC_ID, u8
	evAttrRemID       uint16 = 4  // MPTCP_ATTR_REM_ID, u8
	evAttrSaddr4      uint16 = 5  // MPTCP_ATTR_SADDR4, be32
	evAttrSaddr6      uint16 = 6  // MPTCP_ATTR_SADDR6, struct in6_addr
	evAttrDaddr4      uint16 = 7  // MPTCP_ATTR_DADDR4, be32
	evAttrDaddr6      uint16 = 8  // MPTCP_ATTR_DADDR6, struct in6_addr
	evAttrSport       uint16 = 9  // MPTCP_ATTR_SPORT, be16
	evAttrDport       uint16 = 10 // MPTCP_ATTR_DPORT, be16
	evAttrBackup      uint16 = 11 // MPTCP_ATTR_BACKUP, u8
	evAttrError       uint16 = 12 // MPTCP_ATTR_ERROR, u8
	evAttrFlags       uint16 = 13 // MPTCP_ATTR_FLAGS, u16
	evAttrTimeout     uint16 = 14 // MPTCP_ATTR_TIMEOUT, u32
	evAttrIfIdx       uint16 = 15 // MPTCP_ATTR_IF_IDX, s32
	evAttrResetReason uint16 = 16 // MPTCP_ATTR_RESET_REASON, u32
	evAttrResetFlags  uint16 = 17 // MPTCP_ATTR_RESET_FLAGS, u32
	evAttrServerSide  uint16 = 18 // MPTCP_ATTR_SERVER_SIDE, u8 (deprecated in 6.18 for EventFlagServerSide)
)
