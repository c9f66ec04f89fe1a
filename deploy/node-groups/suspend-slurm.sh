#!/bin/sh
# Seedance's suspend program for Slurm cloud nodes: runs as `suspend-slurm.sh NAME...` for the
# nodes the autoscaler removed (empty, or drained); Slurm's SuspendProgram powers them down.
set -eu
[ "$#" -gt 0 ] || exit 0
exec scontrol power down "$(echo "$*" | tr ' ' ',')"
