#!/usr/bin/env bash
# Runs one sweep as a Slurm job array, one shard per array task, all writing their shard files
# into one shared directory; merge afterwards with `rnic sweep merge`.
#
#   sbatch --array=1-8 scripts/slurm-sweep.sh scenarios/cliff.toml cliff-shards
#   # when the array is done (or chain it: sbatch --dependency=afterok:<jobid> ...):
#   rnic sweep merge cliff-shards --out out/
#
# Each task uses its array index as the shard number and the array's task count as the shard
# count, so the array's size is the only place the split is stated. Extra arguments after the
# output directory (`--set k=v`, `--seed N`, `--profile P`) go to every shard unchanged, as the
# merge requires.
#SBATCH --job-name=rnic-sweep
#SBATCH --cpus-per-task=2
#SBATCH --output=rnic-sweep-%A_%a.log
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: sbatch --array=1-N $0 SWEEP.toml OUT_DIR [rnic sweep flags...]" >&2
    exit 2
fi
sweep=$1
out=$2
shift 2
: "${SLURM_ARRAY_TASK_ID:?run this script with sbatch --array=1-N}"
: "${SLURM_ARRAY_TASK_COUNT:?run this script with sbatch --array=1-N}"
mkdir -p "$out"
exec rnic sweep "$sweep" --shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT" \
    --jobs "${SLURM_CPUS_PER_TASK:-1}" --out "$out" "$@"
