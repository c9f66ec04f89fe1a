#!/usr/bin/env bash
# tools/release.sh: a Seedance release from one commit (docs/install.md).
#
#   tools/release.sh [build] [--out DIR] [--work DIR] [--key SECKEY] [--jobs N] [--commit REV]
#       The source archive seedance-VERSION.tar.gz (git archive of REV, default HEAD), a Release
#       build made from that archive (not from the working tree), the Debian packages
#       seedance_VERSION_ARCH.deb and libseedance-dev_VERSION_ARCH.deb (CPack), lintian's report,
#       SHA256SUMS over every artifact and, with --key, its minisign signature SHA256SUMS.minisig.
#       SOURCE_DATE_EPOCH is the commit's time: two runs for one commit, in any directories at
#       any times, give byte-identical archive and packages.
#   tools/release.sh archive [--out DIR] [--commit REV]   only the source archive
#   tools/release.sh sums DIR [--key SECKEY]                SHA256SUMS (and signature) in DIR
#   tools/release.sh verify DIR --pubkey PUBKEY             check the signature, then every sum
#
# Exit status: 0 ok, 1 a failed step or check, 2 usage.
set -euo pipefail

usage() {
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
die() { echo "release: $*" >&2; exit 1; }
say() { echo "release: $*" >&2; }

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODE=build
case "${1:-}" in
  build|archive|sums|verify) MODE=$1; shift ;;
  -h|--help) usage ;;
esac
OUT=$SRC/dist
WORK=""
KEY=""
PUBKEY=""
JOBS=$(nproc 2>/dev/null || echo 2)
COMMIT=HEAD
DIR=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=${2:?--out needs a directory}; shift 2 ;;
    --work) WORK=${2:?--work needs a directory}; shift 2 ;;
    --key) KEY=${2:?--key needs a minisign secret key file}; shift 2 ;;
    --pubkey) PUBKEY=${2:?--pubkey needs a minisign public key file}; shift 2 ;;
    --jobs) JOBS=${2:?--jobs needs a number}; shift 2 ;;
    --commit) COMMIT=${2:?--commit needs a revision}; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "release: unknown flag $1" >&2; usage ;;
    *) [ -z "$DIR" ] || usage; DIR=$1; shift ;;
  esac
done

# SHA256SUMS over every file of DIR but itself and its signature; signed when a key is given.
write_sums() {
  local dir=$1
  [ -d "$dir" ] || die "$dir: no such directory"
  ( cd "$dir"
    find . -maxdepth 1 -type f ! -name 'SHA256SUMS*' -printf '%f\n' \
      | LC_ALL=C sort | xargs -r sha256sum > SHA256SUMS.tmp
    [ -s SHA256SUMS.tmp ] || { rm -f SHA256SUMS.tmp; die "$dir: nothing to sum"; }
    mv SHA256SUMS.tmp SHA256SUMS )
  say "$dir/SHA256SUMS: $(wc -l < "$dir/SHA256SUMS") files"
  if [ -n "$KEY" ]; then
    command -v minisign >/dev/null || die "minisign not found (apt-get install minisign)"
    [ -r "$KEY" ] || die "$KEY: cannot read the secret key"
    minisign -S -s "$KEY" -m "$dir/SHA256SUMS" -x "$dir/SHA256SUMS.minisig" \
      -t "seedance release $(basename "$dir")" >/dev/null </dev/null \
      || die "minisign could not sign $dir/SHA256SUMS"
    say "$dir/SHA256SUMS.minisig: signed"
  fi
}

verify() {
  local dir=$1
  [ -n "$PUBKEY" ] || die "verify needs --pubkey FILE"
  [ -f "$dir/SHA256SUMS" ] || die "$dir/SHA256SUMS: missing"
  [ -f "$dir/SHA256SUMS.minisig" ] || die "$dir/SHA256SUMS.minisig: missing"
  minisign -V -q -p "$PUBKEY" -m "$dir/SHA256SUMS" -x "$dir/SHA256SUMS.minisig" \
    || die "$dir/SHA256SUMS: the signature does not match the public key $PUBKEY"
  ( cd "$dir" && sha256sum --quiet --strict -c SHA256SUMS ) \
    || die "$dir: a file differs from SHA256SUMS"
  say "$dir: signature and $(wc -l < "$dir/SHA256SUMS") checksums verified"
}

version() {
  sed -n 's/^project(seedance VERSION \([0-9.]*\) .*/\1/p' "$SRC/CMakeLists.txt"
}

# The source archive of COMMIT: git archive's tar (each file's time is the commit's), gzip -n.
archive() {
  local v rev
  v=$(version)
  rev=$(git -C "$SRC" rev-parse --verify "$COMMIT^{commit}") || die "$COMMIT: not a commit"
  mkdir -p "$OUT"
  git -C "$SRC" archive --format=tar --prefix="seedance-$v/" "$rev" | gzip -9n > "$OUT/.tmp.tar.gz"
  mv "$OUT/.tmp.tar.gz" "$OUT/seedance-$v.tar.gz"
  say "$OUT/seedance-$v.tar.gz (commit $rev)"
}

# Debian's hardening flags, as a Debian package build gets them from dpkg-buildflags (with
# hardening=+all): _FORTIFY_SOURCE, the stack protector, format checks, RELRO and BIND_NOW. -g and
# -O2 are left to CMake's Release type, and dpkg's own path map to the build's.
hardening() {
  DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1" | tr ' ' '\n' \
    | grep -vE '^(-g|-O2|-ffile-prefix-map=.*|)$' | tr '\n' ' '
}

build() {
  local v rev epoch short work cxxflags ldflags
  v=$(version)
  rev=$(git -C "$SRC" rev-parse --verify "$COMMIT^{commit}") || die "$COMMIT: not a commit"
  short=${rev:0:12}
  epoch=$(git -C "$SRC" log -1 --format=%ct "$rev")
  if [ "$COMMIT" = HEAD ] && [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no)" ]; then
    say "note: the working tree has uncommitted changes; the release is of commit $short only"
  fi
  work=${WORK:-$(mktemp -d /tmp/seedance-release.XXXXXX)}
  mkdir -p "$work" "$OUT"
  archive
  rm -rf "$work/src" "$work/build"
  mkdir -p "$work/src"
  tar -xzf "$OUT/seedance-$v.tar.gz" -C "$work/src"
  export SOURCE_DATE_EPOCH=$epoch
  say "building $short in $work (SOURCE_DATE_EPOCH=$epoch)"
  command -v dpkg-buildflags >/dev/null || die "dpkg-buildflags not found (apt-get install dpkg-dev)"
  cxxflags="$(hardening CPPFLAGS)$(hardening CXXFLAGS)"
  ldflags=$(hardening LDFLAGS)
  say "hardening: $cxxflags| $ldflags"
  cmake -S "$work/src/seedance-$v" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX=/usr -DSEEDANCE_BUILD_TESTS=OFF -DSEEDANCE_BUILD_BENCH=OFF \
    "-DCMAKE_CXX_FLAGS=$cxxflags" "-DCMAKE_EXE_LINKER_FLAGS=$ldflags" \
    "-DCMAKE_SHARED_LINKER_FLAGS=$ldflags" "-DCMAKE_MODULE_LINKER_FLAGS=$ldflags" \
    -DSEEDANCE_GIT_COMMIT="$short" > "$work/configure.log" \
    || { cat "$work/configure.log" >&2; die "configure failed"; }
  cmake --build "$work/build" -j"$JOBS" || die "build failed"
  ( cd "$work/build" && cpack -G DEB > "$work/cpack.log" 2>&1 ) \
    || { cat "$work/cpack.log" >&2; die "cpack failed"; }
  find "$OUT" -maxdepth 1 -name '*.deb' -delete
  cp "$work/build"/*.deb "$OUT/"
  if command -v lintian >/dev/null; then
    lintian --tag-display-limit 0 --info "$OUT"/*.deb > "$OUT/lintian.txt" 2>&1 || true
    say "lintian: $(grep -c '^E:' "$OUT/lintian.txt" || true) errors, $(grep -c '^W:' \
      "$OUT/lintian.txt" || true) warnings ($OUT/lintian.txt)"
  else
    say "lintian not found: no lintian report (apt-get install lintian)"
  fi
  write_sums "$OUT"
  [ -n "$WORK" ] || rm -rf "$work"
}

case "$MODE" in
  build) build ;;
  archive) archive ;;
  sums) [ -n "$DIR" ] || usage; write_sums "$DIR" ;;
  verify) [ -n "$DIR" ] || usage; verify "$DIR" ;;
esac
