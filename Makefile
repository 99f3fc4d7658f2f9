# SPDX-License-Identifier: Apache-2.0
# mptcp-cc: coupled MPTCP congestion control in eBPF.
#
#   make deps    install every system package the project needs (idempotent)
#   make build   bin/mptcp-cc, bin/mptcp-lab, bin/mptcp-xfer
#   make deb     mptcp-cc_VERSION_ARCH.deb, the Debian package (docs/package.md)
#   make release archives and .deb for amd64 and arm64 with SHA256SUMS (docs/releasing.md)
#   make image   the agent's container image, built with buildah (docs/fleet.md)
#   make test    the whole test suite (root: it loads BPF and builds namespaces)
#   make demo    load a coupled CC and watch the subflows of a live transfer
#   make bench   benchmarks (not run in CI)
#   make fairness-matrix  the whole fairness matrix (hours: docs/results/fairness.md)
#   make matrix  the kernel-support matrix: each kernel booted, the binary checked in it (docs/kernels.md)
#   make reproduce  re-run the seed papers' experiments (long: docs/results/)
#   make reproduce-sched  the packet-scheduler experiments, in the test kernel's VM

GO       ?= go
CLANG    ?= clang-19
BPFTOOL  ?= bpftool
GO_MIN   := 1.26
GO_TOOLCHAIN := go1.26.8
# virtme-ng boots the shared test kernel for the VM tests (internal/vmtest).
VNG_VERSION := 1.42
VNG_DIR  ?= /opt/mptcp-cc-vng
export MPTCP_CC_VNG ?= $(VNG_DIR)/bin/vng

DEB_PACKAGES := clang-19 llvm-19 libbpf-dev bpftool iproute2 iperf3 mptcpd mptcpd-plugins \
	ethtool iputils-ping curl unzip ca-certificates zsh groff-base prometheus \
	qemu-system-x86 qemu-system-arm cpio python3-venv busybox-static buildah podman runc

VMLINUX  := bpf/include/vmlinux.h
# Every BPF source and header: an edit to any of them regenerates the objects.
BPF_SRC  := $(filter-out $(VMLINUX),$(wildcard bpf/*.bpf.c bpf/*/*.bpf.c bpf/*/*.h))
# Every package with BPF objects has a gen.go with its go:generate lines.
GEN_FILES := $(shell find pkg lab -name gen.go)
GEN_STAMP := .generated

export BPF2GO_CC := $(CLANG)
export BPF2GO_STRIP := llvm-strip-19

.PHONY: all deps build gen-docs generate release image test test-short bench fairness-matrix fairness-aqm matrix soak demo clean vet reproduce reproduce-wvegas reproduce-sched deb repro-kernel repro-integrity repro-ssthresh repro-subflow-loss repro-kernel-vm repro-kernel-debian repro-ack-patch kernel-patches

# What the binaries say they are (`mptcp-cc version`): the git state built.
VERSION_PKG  := github.com/mptcp-cc/mptcp-cc/internal/version
GIT_DESCRIBE := $(shell git describe --tags --always --dirty 2>/dev/null)
GIT_COMMIT   := $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS      := $(if $(GIT_COMMIT),-X $(VERSION_PKG).Version=$(GIT_DESCRIBE) -X $(VERSION_PKG).Commit=$(GIT_COMMIT))

all: build

# Debian packages first; then Go, which Debian 12 only has as 1.19: when `go`
# is missing or older than $(GO_MIN), the official toolchain is fetched from
# the Go module proxy (the same archive GOTOOLCHAIN=auto downloads).
# install-debs PACKAGES: apt-get install those not installed yet.
define install-debs
	@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
endef

deps:
	$(call install-debs,$(DEB_PACKAGES))
	@./scripts/ensure-go.sh $(GO_MIN) $(GO_TOOLCHAIN)
	@./scripts/ensure-vng.sh $(VNG_DIR) $(VNG_VERSION)

$(VMLINUX):
	@test -r /sys/kernel/btf/vmlinux || { echo "kernel has no BTF (/sys/kernel/btf/vmlinux): needs CONFIG_DEBUG_INFO_BTF=y"; exit 1; }
	@mkdir -p $(dir $@)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(GEN_STAMP): $(BPF_SRC) $(VMLINUX) $(GEN_FILES)
	$(GO) generate $(addprefix ./,$(dir $(GEN_FILES)))
	@touch $@

generate: $(GEN_STAMP)

# Static (CGO_ENABLED=0): nothing here needs cgo, and a static binary runs
# on any Linux of the architecture, as the Debian package's must.
build: generate
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

# Man pages and shell completions, generated from the commands' own
# definitions (internal/cli), so they cannot drift from the flags.
BINARIES := mptcp-cc mptcp-lab mptcp-xfer
gen-docs: build
	@mkdir -p build/man build/completions/bash build/completions/zsh
	@for b in $(BINARIES); do \
		bin/$$b man build/man && \
		bin/$$b completion bash > build/completions/bash/$$b && \
		bin/$$b completion zsh > build/completions/zsh/_$$b || exit 1; \
	done
	@echo "man pages in build/man, completions in build/completions"

vet: generate
	$(GO) vet ./...

# Packages run one at a time (-p 1): their tests time real transfers through
# shaped links, and two at once on a 2-core machine would skew each other.
# kmsg-guard fails the run if the kernel logged a WARN, BUG, oops or BPF
# struct_ops error while it ran (internal/kmsg), except the faults that
# docs/kernel-faults.md traces to this host's kernel build
# (kmsg.KnownFaults), which it reports and counts.
test: deps build
	$(GO) vet ./...
	$(GO) run ./scripts/kmsg-guard -- $(GO) test -p 1 -count=1 -timeout 45m ./...

test-short: generate
	$(GO) test -p 1 -count=1 -short ./...

# Benchmarks are tests named TestBench*, gated by these variables so the
# normal suite skips them; each prints its side-by-side table.
bench: deps build
	MPTCP_CC_BENCH=1 LINKEM_BENCH=1 $(GO) test -p 1 -count=1 -timeout 150m -run 'TestBench' -v ./... | tee bench.log

# The kernel-support matrix (issue 27; docs/kernels.md, "The support
# matrix"): lab/matrix's TestMatrix boots each kernel of matrix.Kernels
# (Debian's, fetched into KERNEL_CACHE by scripts/debian-kernel.sh; the
# shared test kernel) under QEMU, or checks the host's in place, runs the
# project's binary through the end-to-end check in each, keeps each
# kernel's result in MATRIX_OUT (a kept one is not run again:
# MPTCP_CC_MATRIX_REDO=1; MATRIX_KERNELS=debian-6.12,host runs a subset)
# and writes the table into docs/kernels.md and the results into
# docs/kernels-matrix.json. Each kernel holds REPRO_LOCK while it runs.
# About 3-6 minutes per kernel under TCG. Not in CI: TestMatrixFast is.
MATRIX_OUT ?= $(HOME)/.cache/mptcp-cc/matrix
MATRIX_KERNELS ?=
matrix: deps generate
	MPTCP_CC_MATRIX=$(MATRIX_OUT) MPTCP_CC_MATRIX_KERNELS=$(MATRIX_KERNELS) MPTCP_CC_MATRIX_DOCS=$(CURDIR)/docs/kernels.md \
		MPTCP_CC_MATRIX_LOCK=$(REPRO_LOCK) $(GO) test -p 1 -count=1 -timeout 0 -run '^TestMatrix$$' -v ./lab/matrix/

# The whole fairness matrix (issue 12; docs/results/fairness.md, "The
# matrix"): every cell of FAIRNESS_MATRIX, one per RTT so a long run keeps
# what it finished, each RTT's table and chart in
# $(REPRO_OUT)/fairness-matrix/rtt<RTT>.{md,svg}. About 1.5 minutes per arm
# and cell (3 runs), so the default (4 RTTs x 4 queues x 2 subflow counts
# x 6 arms x 2 references) takes about 10 hours; at 1 ms every BDP queue
# is tbf's 3-packet floor, so its BDP cells repeat one another.
FAIRNESS_MATRIX_RTTS ?= 1 10 40 100
FAIRNESS_MATRIX ?= queue=0.5,1,2,100p subflows=2,4 ref=reno,cubic runs=3

fairness-matrix: deps generate
	mkdir -p $(REPRO_OUT)/fairness-matrix
	@for r in $(FAIRNESS_MATRIX_RTTS); do \
		MPTCP_CC_BENCH=1 FAIRNESS="rtt=$$r $(FAIRNESS_MATRIX)" FAIRNESS_OUT=$(REPRO_OUT)/fairness-matrix/rtt$$r.md flock $(REPRO_LOCK) \
			$(GO) test -count=1 -timeout 0 -run '^TestBenchFairness$$' -v ./pkg/cc/ || exit 1; \
	done

# The fairness matrix behind AQM bottlenecks (issue 30;
# docs/results/fairness.md, "Behind AQM"): drop-tail, RED, CoDel and
# FQ-CoDel (lab/linkem) at each RTT and subflow count, every arm, the Reno
# reference, 5 runs per cell. One cell takes about 10 minutes (24 cells:
# about 4 hours); each finished cell is kept in FAIRNESS_AQM_OUT and not
# run again, so an interrupted matrix resumes where it stopped
# (scripts/fairness-cells.sh); FAIRNESS_AQM_OUT/table.md gathers them.
FAIRNESS_AQM_RTTS     ?= 10 40 1
FAIRNESS_AQM_SUBFLOWS ?= 2 4
FAIRNESS_AQM_KINDS    ?= droptail red codel fq_codel
FAIRNESS_AQM_QUEUES   ?= 100p
FAIRNESS_AQM          ?= ref=reno runs=5
FAIRNESS_AQM_OUT      ?= $(REPRO_OUT)/fairness-aqm

fairness-aqm: deps generate
	GO="$(GO)" REPRO_LOCK="$(REPRO_LOCK)" OUT="$(FAIRNESS_AQM_OUT)" RTTS="$(FAIRNESS_AQM_RTTS)" \
		SUBFLOWS="$(FAIRNESS_AQM_SUBFLOWS)" AQMS="$(FAIRNESS_AQM_KINDS)" QUEUES="$(FAIRNESS_AQM_QUEUES)" \
		SPEC="$(FAIRNESS_AQM)" scripts/fairness-cells.sh

# Long soak of loss recovery (about 11 min): the window guard's check.
soak: deps build
	MPTCP_CC_SOAK=1 $(GO) run ./scripts/kmsg-guard -- $(GO) test -p 1 -count=1 -timeout 60m -run 'TestSoak' -v ./pkg/cc/

demo: deps build
	./scripts/demo.sh

clean:
	rm -rf bin build $(VMLINUX) $(VMLINUX).tmp $(GEN_STAMP) pkg/*/*_bpfel.go pkg/*/*_bpfel.o lab/*/*_bpfel.go lab/*/*_bpfel.o

# The seed papers' experiments (docs/results/*.md): every scenario file of an
# experiment runs under the network lock on its own, so other users of the
# machine can interleave; then the tables and charts are regenerated.
# `make reproduce-rsf` (or -khalili, -lisa, -wvegas) runs one experiment.
REPRO_OUT  ?= lab-results
REPRO_LOCK ?= /tmp/mptcp-cc-net.lock
REPRO_EXPERIMENTS := rsf khalili lisa wvegas

reproduce: build
	@for e in $(REPRO_EXPERIMENTS); do $(MAKE) --no-print-directory reproduce-$$e || exit 1; done

reproduce-%: build
	@for f in testdata/scenarios/$*/*.yaml; do \
		flock $(REPRO_LOCK) bin/mptcp-lab run $$f --out $(REPRO_OUT) || exit 1; \
	done
	bin/mptcp-lab report docs/results/$*.report.yaml --results $(REPRO_OUT)

# wVegas (docs/results/wvegas.md) also measures how its connection's traffic
# moves between the paths when a TCP flow starts on one of them: that table
# (mptcp-lab paths) goes next to the report's data.
reproduce-wvegas: build
	@for f in testdata/scenarios/wvegas/*.yaml; do \
		flock $(REPRO_LOCK) bin/mptcp-lab run $$f --out $(REPRO_OUT) || exit 1; \
	done
	bin/mptcp-lab report docs/results/wvegas.report.yaml --results $(REPRO_OUT)
	for s in wvegas-shift wvegas-shift-bloat; do \
		bin/mptcp-lab paths $(REPRO_OUT)/$$s --flow mp --path b --at 10s --before 5s-10s --after 15s-30s \
			> docs/results/wvegas/data/$$s/paths.md || exit 1; \
	done

# The packet-scheduler experiments (docs/results/sched.md: DAPS blocking
# time, PAPD aggregation efficiency, the cost of a decision) run in the test
# kernel's VM, the only kernel here with the BPF scheduler hook. SCHED_EXP
# selects and sizes them (lab/schedexp ParseSpec: "1" is everything with its
# defaults; e.g. SCHED_EXP='run=daps scheds=default,minrtt,daps reps=3');
# the JSON and markdown results go to $(REPRO_OUT)/sched. The VM bounds the
# run (timeout= in SCHED_EXP, default 4 h), so go test's own limit is off.
SCHED_EXP ?= 1

reproduce-sched: deps generate
	MPTCP_CC_SCHED_EXP='$(SCHED_EXP) out=$(abspath $(REPRO_OUT))/sched' flock $(REPRO_LOCK) \
		$(GO) test -count=1 -timeout 0 -run '^TestSchedExpInVM$$' -v ./lab/schedexp/

# The Debian package (docs/package.md): the three commands, the systemd unit,
# a default configuration, docs, man pages and completions. Its binaries are
# linked apart from bin/, without symbols (-s -w) as Debian ships them; the
# compiled packages are bin/'s, from the build cache. DEB_VERSION defaults
# to one made from git describe (deploy/debian/version.sh); DEB_OUT is where
# the .deb goes, DEB_STAGE the scratch directory.
DEB_OUT        ?= .
DEB_STAGE      ?= build/deb
DEB_VERSION    ?=
DEB_ARCH       ?= $(shell dpkg --print-architecture 2>/dev/null)
DEB_MAINTAINER ?= mptcp-cc maintainers <maintainers@users.noreply.a-seed-3ba4fe33.example>

# A release (docs/releasing.md): for amd64 and arm64, the archive
# mptcp-cc_VERSION_linux_ARCH.tar.gz (static binaries with the BPF objects
# embedded, man pages, completions, the unit, the default configuration,
# docs) and the .deb, with SHA256SUMS, in RELEASE_OUT. Cross-built from any
# host with `make deps`: the binaries are pure Go and the BPF objects
# little-endian CO-RE, the same for both. Two runs give the same sums.
RELEASE_OUT   ?= dist
RELEASE_ARCHS ?= amd64 arm64

release: generate gen-docs
	RELEASE_OUT='$(RELEASE_OUT)' RELEASE_ARCHS='$(RELEASE_ARCHS)' LDFLAGS='$(LDFLAGS)' \
	DEB_MAINTAINER='$(DEB_MAINTAINER)' GO='$(GO)' scripts/release.sh

# The agent's container image (docs/fleet.md), FROM scratch with the static
# binary that `make build` made, built by buildah (no daemon, no pull).
IMAGE ?= localhost/mptcp-cc:$(shell deploy/debian/version.sh 2>/dev/null | tr '~+' '--')

image: build
	deploy/container/build.sh bin/mptcp-cc '$(IMAGE)'

deb: generate gen-docs
	@test -n "$(DEB_ARCH)" || { echo "make deb: dpkg --print-architecture failed: build on Debian, or set DEB_ARCH"; exit 1; }
	CGO_ENABLED=0 $(GO) build -ldflags '-s -w $(LDFLAGS)' -o $(DEB_STAGE)/bin/ $(addprefix ./cmd/,$(BINARIES))
	@v='$(DEB_VERSION)'; [ -n "$$v" ] || v=$$(deploy/debian/version.sh) || exit 1; \
	DEB_PROGS='$(BINARIES)' DEB_VERSION="$$v" DEB_ARCH='$(DEB_ARCH)' DEB_MAINTAINER='$(DEB_MAINTAINER)' \
	DEB_BIN='$(DEB_STAGE)/bin' DEB_DOCS=build DEB_STAGE='$(DEB_STAGE)' DEB_OUT='$(DEB_OUT)' \
	GO='$(GO)' deploy/debian/build.sh

# The kernel-fault reproducers (docs/kernel-faults.md), each printing its
# rate per arm with the 95% interval and writing every finding as JSON:
#   repro-integrity  wrong bytes: REPRO_CONNS short MPTCP connections per
#                    arm, every byte checked (REPRO_ARMS; default cubic reno
#                    bbr lia olia cubic+csum);
#   repro-ssthresh   implausible ssthresh: every arm under the same lossy
#                    load for REPRO_SSTHRESH_FOR, watched read-only
#                    (REPRO_SSTHRESH_ARMS; default our four, bpfreno, reno,
#                    cubic, cubic+tcp).
#   repro-subflow-loss  two subflows of one MPTCP connection against two
#                    TCP flows and two one-subflow MPTCP connections, all
#                    the kernel's Reno, each against one TCP flow at one
#                    drop-tail queue, with the server's delayed ACKs and
#                    without (REPRO_FAIRNESS: the fairness bench's FAIRNESS
#                    cells).
# repro-kernel runs all three.
REPRO_CONNS ?= 10000
REPRO_ARMS  ?=
REPRO_SSTHRESH_FOR  ?= 20m
REPRO_SSTHRESH_ARMS ?=

REPRO_FAIRNESS ?= rtt=1,40 queue=100p subflows=2 cc=tcp,mptcp1,reno runs=5 quickack=off,on

repro-kernel: repro-integrity repro-ssthresh repro-subflow-loss

repro-integrity: build
	mkdir -p $(REPRO_OUT)
	flock $(REPRO_LOCK) bin/mptcp-lab integrity --conns $(REPRO_CONNS) --json $(REPRO_OUT)/integrity.json $(REPRO_ARMS)

repro-ssthresh: build
	mkdir -p $(REPRO_OUT)
	flock $(REPRO_LOCK) bin/mptcp-lab ssthresh --for $(REPRO_SSTHRESH_FOR) --json $(REPRO_OUT)/ssthresh.json $(REPRO_SSTHRESH_ARMS)

repro-subflow-loss: deps generate
	MPTCP_CC_BENCH=1 FAIRNESS='$(REPRO_FAIRNESS)' flock $(REPRO_LOCK) \
		$(GO) test -count=1 -timeout 0 -run '^TestBenchFairness$$' -v ./pkg/cc/

# The same in the shared test kernel's VM (QEMU without KVM: slow, so fewer
# connections and a slower bottleneck): wrong bytes with cubic, our LIA,
# cubic with DSS checksums (the report goes to lab-results/integrity-vm);
# the ssthresh arms for REPRO_SSTHRESH_VM (lab-results/ssthresh-vm);
# the subflows' loss at 5 Mbit/s (REPRO_FAIRNESS_VM; lab-results/fairness-vm).
REPRO_VM_CONNS ?= 2000
REPRO_SSTHRESH_VM ?= 10m
REPRO_FAIRNESS_VM ?= rtt=40 queue=1 subflows=2 cc=tcp,mptcp1,reno runs=3 rate=5 quickack=off,on

repro-kernel-vm: deps generate
	MPTCP_CC_REPRO_VM=$(REPRO_VM_CONNS) MPTCP_CC_REPRO_SSTHRESH_VM=$(REPRO_SSTHRESH_VM) flock $(REPRO_LOCK) \
		$(GO) test -p 1 -count=1 -timeout 0 -run '^Test(Integrity|Ssthresh)InVM$$' -v ./lab/integrity/ ./lab/ssthresh/
	MPTCP_CC_BENCH=1 FAIRNESS_VM='$(REPRO_FAIRNESS_VM)' flock $(REPRO_LOCK) \
		$(GO) test -count=1 -timeout 0 -run '^TestBenchFairnessInVM$$' -v ./pkg/cc/

# The wrong-bytes and ssthresh reproducers in Debian's own kernels, in place
# of the test kernel: scripts/debian-kernel.sh fetches each package with a
# private apt state (the host's sources stay as they are) and unpacks it into
# KERNEL_CACHE. Reports: lab-results/{integrity,ssthresh}-vm-VERSION-amd64.
DEBIAN_KERNELS ?= 6.12.117+deb12 6.18.15+deb13 7.2.13+deb14 7.3.4+deb13
KERNEL_CACHE   ?= $(HOME)/.cache/mptcp-cc/kernels

repro-kernel-debian: deps generate
	@for v in $(DEBIAN_KERNELS); do \
		k=$$(scripts/debian-kernel.sh "$$v" '$(KERNEL_CACHE)') || exit 1; \
		echo "== $$v"; \
		MPTCP_CC_VM_KIMG="$$k" MPTCP_CC_REPRO_VM=$(REPRO_VM_CONNS) MPTCP_CC_REPRO_SSTHRESH_VM=$(REPRO_SSTHRESH_VM) \
			flock $(REPRO_LOCK) $(GO) test -p 1 -count=1 -timeout 0 -run '^Test(Integrity|Ssthresh)InVM$$' -v \
			./lab/integrity/ ./lab/ssthresh/ || exit 1; \
	done

# A proposed kernel fix for the held ACKs of docs/kernel-faults.md section
# 3, measured: scripts/patched-kernel.sh builds the test kernel's Linux
# (7.3.4, its config) as it is and with REPRO_ACK_PATCH, and the fairness
# bench runs REPRO_ACK_FAIRNESS in each, REPRO_ACK_ROUNDS times, the two
# kernels alternated. Reports: lab-results/fairness-vm-7.3.4-mpcc-control
# and -mpcc-NAME (the patch's name); each round overwrites the last, so
# the logs (make's output) keep every round's table.
KBUILD_PACKAGES    := gcc make flex bison bc libelf-dev libssl-dev cpio dwarves
REPRO_ACK_PATCH    ?= scripts/kernel-patches/mptcp-rx-empty/0001-mptcp-release-a-held-subflow-ack-when-the-msk-receiv.patch
REPRO_ACK_FAIRNESS ?= rtt=40 queue=1 subflows=2 cc=tcp,mptcp1,reno,lia,olia,balia,rsf runs=3 rate=5 ackwatch=on
REPRO_ACK_ROUNDS   ?= 2

repro-ack-patch: deps generate
	$(call install-debs,$(KBUILD_PACKAGES))
	@c=$$(scripts/patched-kernel.sh '$(KERNEL_CACHE)') || exit 1; \
	p=$$(scripts/patched-kernel.sh '$(KERNEL_CACHE)' '$(REPRO_ACK_PATCH)') || exit 1; \
	for r in $$(seq $(REPRO_ACK_ROUNDS)); do for k in "$$c" "$$p"; do \
		echo "== round $$r: $$k"; \
		MPTCP_CC_VM_KIMG="$$k" MPTCP_CC_BENCH=1 FAIRNESS_VM='$(REPRO_ACK_FAIRNESS)' flock $(REPRO_LOCK) \
			$(GO) test -count=1 -timeout 0 -run '^TestBenchFairnessInVM$$' -v ./pkg/cc/ || exit 1; \
	done; done

# The kernel fix as a series a maintainer takes (scripts/kernel-patches/
# mptcp-rx-empty/: git format-patch, cover letter, the fix and a selftest
# in the style of the kernel's MPTCP selftests), checked and run again:
# checkpatch, the control and patched kernels, and the upstream MPTCP
# selftests with the reproducer in each kernel's VM. KERNEL_PATCH_TESTS
# narrows the selftests (mptcp_join.sh alone takes hours without KVM).
# Report: lab-results/kernel-patches/summary.md.
KERNEL_PATCH_TESTS ?=
kernel-patches: deps
	$(call install-debs,$(KBUILD_PACKAGES) perl iptables ethtool)
	flock $(REPRO_LOCK) scripts/kernel-patches/upstream.sh '$(KERNEL_CACHE)' lab-results/kernel-patches $(KERNEL_PATCH_TESTS)
