#!/usr/bin/env bash
# A real Slurm on this machine, for trying `seedance server --backend slurm` (docs/slurm.md,
# "Quick start on one machine"). Built on the harness the tests use (tests/slurm/slurm_cluster.py):
# munged, slurmctld, one slurmd per emulated node with fake GPU device files, and slurmrestd with
# JWT authentication running as an unprivileged user (it refuses root). Everything lives under
# DIR; nothing in /etc/slurm, /etc/munge or /var is read or written. Needs root (slurmd) and the
# Debian packages `check` names; installs nothing.
#
#   tools/slurm-local.sh start DIR [--nodes N] [--gpus G]   start, write DIR/slurm.jwt and
#                                                           DIR/seedance.env, print what to run
#   tools/slurm-local.sh token DIR [SECONDS]                renew DIR/slurm.jwt (default a day)
#   tools/slurm-local.sh status DIR                         daemons, ports, node states (JSON)
#   tools/slurm-local.sh stop DIR                           stop every daemon (idempotent)
#   tools/slurm-local.sh check                              are the packages there?
#
# Exit status: 0 done, 1 a daemon or command failed, 2 bad usage.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HARNESS="$HERE/../tests/slurm/slurm_cluster.py"
PY=/usr/bin/python3

usage() {  # usage [STATUS]: the header above; to stderr unless STATUS is 0
  local status=${1:-2}
  if [ "$status" = 0 ]; then
    sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  else
    sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  fi
  exit "$status"
}

# DIR/slurm.jwt: a token signed by this cluster's slurmctld (`scontrol token`), written whole
# (a temporary file renamed over the old one), so a running server never reads half of one.
write_token() {
  local dir=$1 lifespan=$2 conf out
  conf="$dir/etc/slurm.conf"
  out=$(SLURM_CONF="$conf" scontrol token username=root "lifespan=$lifespan") || {
    echo "slurm-local: scontrol token failed (is the cluster under $dir running?)" >&2
    exit 1
  }
  (umask 077 && printf '%s\n' "$out" >"$dir/slurm.jwt.new")
  mv -f "$dir/slurm.jwt.new" "$dir/slurm.jwt"
}

cmd=${1:-}
[ -n "$cmd" ] || usage
shift
case "$cmd" in
  check)
    exec "$PY" "$HARNESS" check
    ;;
  start)
    [ $# -ge 1 ] || usage
    dir=$1
    shift
    nodes=4 gpus=8
    while [ $# -gt 0 ]; do
      case "$1" in
        --nodes) nodes=${2:?--nodes needs a count}; shift 2 ;;
        --gpus) gpus=${2:?--gpus needs a count}; shift 2 ;;
        *) echo "slurm-local: unknown flag '$1'" >&2; usage ;;
      esac
    done
    if [ "$(id -u)" != 0 ]; then
      echo "slurm-local: start needs root (slurmd runs jobs as their users and the fake GPUs" \
        "are device files); try: sudo $0 start $dir" >&2
      exit 1
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # slurmrestd runs as an unprivileged user and must reach the cluster's files.
    chmod 755 "$dir"
    "$PY" "$HARNESS" start "$dir" --nodes "$nodes" --gpus "$gpus"
    write_token "$dir" 86400
    url=$("$PY" "$HARNESS" status "$dir" | "$PY" -c \
      'import json,sys; print("http://127.0.0.1:%d" % json.load(sys.stdin)["ports"]["slurmrestd"])')
    cat >"$dir/seedance.env" <<EOF
export SLURM_CONF=$dir/etc/slurm.conf
export SEEDANCE_SLURM_URL=$url
export SEEDANCE_SLURM_TOKEN_FILE=$dir/slurm.jwt
EOF
    echo "slurmrestd: $url   token: $dir/slurm.jwt (a day; renew: $0 token $dir)"
    echo "next:  . $dir/seedance.env"
    echo '       seedance server --state '"$dir"'/state --backend slurm \'
    echo '         --slurm-url $SEEDANCE_SLURM_URL --slurm-token-file $SEEDANCE_SLURM_TOKEN_FILE'
    ;;
  token)
    [ $# -ge 1 ] || usage
    dir=$(cd "$1" && pwd)
    write_token "$dir" "${2:-86400}"
    echo "renewed $dir/slurm.jwt for ${2:-86400} s"
    ;;
  status | stop)
    [ $# -ge 1 ] || usage
    exec "$PY" "$HARNESS" "$cmd" "$1"
    ;;
  -h | --help | help)
    usage 0
    ;;
  *)
    echo "slurm-local: unknown command '$cmd'" >&2
    usage
    ;;
esac
