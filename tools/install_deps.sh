#!/usr/bin/env bash
# Installs the Debian bookworm packages Seedance needs to build, test, benchmark and fuzz.
# Only missing packages are installed; when everything is present this exits at once without
# touching the network. Runs as root or, failing that, through sudo. Safe to run repeatedly.
set -euo pipefail

PACKAGES=(
  cmake
  ninja-build
  g++
  clang
  # LLVM's linker for the sanitizer builds: 3x faster than ld.bfd on the 200 MB ASan binaries.
  lld
  libclang-rt-14-dev
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  nlohmann-json3-dev
  libyaml-cpp-dev
  libcli11-dev
  libabsl-dev
  libfmt-dev
  pkg-config
  libboost-dev
  libboost-context-dev
  libevent-dev
  chrony
  libhwloc-dev
  libcpp-httplib-dev
  libsqlite3-dev
  prometheus-cpp-dev
  libssl-dev
  libgrpc++-dev
  libprotobuf-dev
  protobuf-compiler
  protobuf-compiler-grpc
  etcd-server
  etcd-client
  curl
  # The doc test (tools/doctest.py) runs the docs' examples: they use jq; each page gets its own
  # loopback with `ip` (iproute2) and `unshare` (util-linux, always there).
  jq
  iproute2
  wrk
  prometheus
  python3
  # A real Slurm for the Slurm backend's tests (tests/slurm/README.md); never slurm-wlm-emulator.
  slurmctld
  slurmd
  slurmrestd
  slurm-client
  munge
  slurm-wlm-jwt-plugin
  # seedance_model (docs/model.md): ONNX's protobuf model, checker and shape inference; oneDNN's
  # FP32 matmul and convolution; ONNX's own node conformance cases for the executor's test.
  libonnx-dev
  libdnnl-dev
  libonnx-testdata
  # seedance_train (docs/training.md): the all-reduces run on Open MPI (mpirun, libmpi); the
  # benchmark's ranks talk through network namespaces and tc rate limits (iproute2, above).
  libopenmpi-dev
  openmpi-bin
  # seedance_cache (issue 40): the cache traces are zstd, xz, gzip and bzip2 files (liblzma-dev
  # and zlib1g-dev come with other packages, but are named so that nothing relies on that).
  libzstd-dev
  liblzma-dev
  zlib1g-dev
  libbz2-dev
  # The node-local cache's tests (src/nodeagent/node_cache_test.cc) use Debian's nginx on loopback as
  # the object store: static GET with ranges, and WebDAV PUT (http_dav_module) for demotion.
  # Test-time only.
  nginx
  # Delivery (docs/install.md): minisign signs and checks SHA256SUMS; systemd-analyze checks the
  # unit; groff reads the generated manual pages; dpkg-shlibdeps (dpkg-dev) gives the package
  # its dependencies.
  minisign
  systemd
  groff-base
  dpkg-dev
)
# `install_deps.sh release`: also what tools/release/package_test.py needs (make release-test):
# a clean Debian root, lintian, and an image builder that needs no daemon.
if [[ "${1:-}" == "release" ]]; then
  PACKAGES+=(debootstrap lintian buildah)
fi
# The model fixtures of seedance_model's tests (tools/model_fixtures), exported once per build
# with torch 1.13; torch.onnx.export needs no onnx module, the fixture scripts do (TensorProto
# files, the checker); the MLP fixture trains on scikit-learn's digits. Test-time only, and
# installed without their recommended packages (libtorch-dev, a compiler tool chain, matplotlib:
# about as much again, and nothing the fixtures use).
NO_RECOMMENDS=(
  python3-torch
  python3-onnx
  python3-sklearn
)
PACKAGES+=("${NO_RECOMMENDS[@]}")

# A package counts as present only when dpkg reports it fully installed ("ii"); states such as
# "rc" (removed, config files left) or half-installed count as missing.
missing=()
for pkg in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Abbrev}' "${pkg}" 2>/dev/null || true)"
  if [[ "${status}" != ii* ]]; then
    missing+=("${pkg}")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install_deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

if [[ "$(id -u)" -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "install_deps: missing packages: ${missing[*]}" >&2
  echo "install_deps: not root and sudo is not available; install them as root" >&2
  exit 1
fi

echo "install_deps: installing ${missing[*]}"
plain=() lean=()
for pkg in "${missing[@]}"; do
  if [[ " ${NO_RECOMMENDS[*]} " == *" ${pkg} "* ]]; then lean+=("${pkg}"); else plain+=("${pkg}"); fi
done
"${SUDO[@]}" apt-get update
if [[ ${#plain[@]} -gt 0 ]]; then
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${plain[@]}"
fi
if [[ ${#lean[@]} -gt 0 ]]; then
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    "${lean[@]}"
fi
echo "install_deps: done"
