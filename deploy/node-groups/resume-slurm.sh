#!/bin/sh
# Seedance's resume program for Slurm cloud nodes (docs/cluster-autoscaler.md, "In the
# service"): `seedance server --backend slurm --node-groups slurm-cloud.json` runs it as
# `resume-slurm.sh NAME...` (SEEDANCE_NODE_GROUP=GROUP in its environment) with the nodes it
# wants. Slurm's own ResumeProgram (slurm.conf) then brings the machines up; once slurmd
# registers, the backend shows the nodes to Seedance. slurm.conf must define the nodes
# GROUP-0 .. GROUP-(max_size) with State=CLOUD.
set -eu
[ "$#" -gt 0 ] || exit 0
exec scontrol power up "$(echo "$*" | tr ' ' ',')"
