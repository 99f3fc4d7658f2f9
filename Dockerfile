# SPDX-License-Identifier: Apache-2.0
# Container image of the mptcp-cc agent (`mptcp-cc serve`), as the Kubernetes
# DaemonSet in deploy/kubernetes/ runs it. docs/fleet.md says how to build,
# push and roll it out; deploy/kubernetes/image_test.go checks this file.
#
#   docker build -t mptcp-cc:dev .
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t registry.example/mptcp-cc:TAG .
#
# The build must run on a Linux host whose kernel has BTF
# (/sys/kernel/btf/vmlinux): `make generate` dumps vmlinux.h from it. The BPF
# objects are CO-RE, so the image runs on other kernels with the features of
# the README's "Kernel requirements".

# ---- build: the same toolchain `make deps` installs on Debian 12 ----------
FROM golang:1.26-bookworm AS build

# The BPF half of `make build`: clang compiles bpf/*.bpf.c, llvm-strip strips
# the objects, libbpf-dev has the bpf_helpers headers, bpftool dumps
# vmlinux.h. Every one is in the Makefile's DEB_PACKAGES.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      clang-19 llvm-19 libbpf-dev bpftool make \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# Modules first, so a source edit does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .

# `make build` links statically (CGO_ENABLED=0: no libc, no ELF
# interpreter), which is what lets the runtime stage be empty. The context
# has no .git (.dockerignore), so the version `mptcp-cc version` reports
# comes from these arguments instead of git describe.
ARG VERSION=dev
ARG REVISION=unknown
RUN make build GIT_DESCRIBE="${VERSION}" GIT_COMMIT="${REVISION}"

# ---- runtime: the binary and nothing else ----------------------------------
# No shell, no libc, no package manager, no CA certificates: the agent opens
# no outbound connection (it talks to the kernel through bpf(2) and netlink
# and serves plain HTTP), logs in UTC, and needs no /etc/passwd because it
# runs as a numeric user.
FROM scratch

COPY --from=build /src/bin/mptcp-cc /usr/local/bin/mptcp-cc

# uid 0 inside the container, but not all of root: the DaemonSet drops every
# capability and adds back CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN. Kubernetes
# gives added capabilities to uid 0 only (it sets no ambient capabilities),
# and a scratch image cannot carry file capabilities reliably.
USER 0:0

# The metrics port of deploy/kubernetes (the DaemonSet passes the address).
EXPOSE 9464

ENTRYPOINT ["/usr/local/bin/mptcp-cc"]
CMD ["serve", "--config=/etc/mptcp-cc/config.yaml"]
