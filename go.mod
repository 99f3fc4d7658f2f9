module github.com/mptcp-cc/mptcp-cc

go 1.26.0

require (
	github.com/mdlayher/genetlink v1.4.0
	github.com/mdlayher/netlink v1.11.2
	golang.org/x/sys v0.49.0
)

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/mdlayher/socket v0.6.0 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
)

tool github.com/cilium/ebpf/cmd/bpf2go
