#!/usr/bin/env bash
# Installs what the project needs on a fresh machine. Idempotent: each step checks first.
set -euo pipefail

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
# make builds jemalloc, the server binary's allocator.
command -v make >/dev/null 2>&1 || need_apt+=(make)
# protoc builds the etcd client; etcd runs the etcd backend's conformance suite and the HA tests.
command -v protoc >/dev/null 2>&1 || need_apt+=(protobuf-compiler)
command -v etcd >/dev/null 2>&1 || need_apt+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || need_apt+=(etcd-client)
command -v diff >/dev/null 2>&1 || need_apt+=(diffutils)
# promtool checks and unit-tests the alerting rules; prometheus serves `karmadactl local-up --monitoring`.
command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)
# dig queries member-sims' cluster.local / clusterset.local DNS in the multi-cluster Service tests.
command -v dig >/dev/null 2>&1 || need_apt+=(bind9-dnsutils)
# HTTP/2 uploads in the API server's tests (curl with nghttp2 reports a reset stream as an error)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
# the dashboard's browser tests drive headless chromium through chromedriver
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium-driver)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

# The suite checks formatting and lints first.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  echo "setup: adding the rustfmt and clippy components"
  rustup component add rustfmt clippy
fi

if ! command -v kubectl >/dev/null 2>&1; then
  echo "setup: kubectl is required for the kubectl suite (the machine image ships /usr/bin/kubectl)" >&2
  exit 1
fi

if ! python3 -c 'import kubernetes' >/dev/null 2>&1; then
  echo "setup: installing the Python kubernetes client"
  python3 -m pip install --quiet 'kubernetes>=31'
fi
