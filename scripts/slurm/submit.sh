#!/usr/bin/env bash
# submit.sh CONFIG N OUTDIR [topkp run args...] — runs a topkp sweep on a Slurm cluster as N
# shards (docs/CLUSTERS.md, "Sweeps on a Slurm cluster"): submits scripts/slurm/sweep.sbatch as the
# job array 0..N-1 (task I writes OUTDIR/shard-I.h5, its log OUTDIR/logs/shard-I.log), then
# scripts/slurm/merge.sbatch, which runs once every task succeeded and writes
# OUTDIR/merged.h5. Prints `sweep_job=ID` and `merge_job=ID`. Submitting again into the same
# OUTDIR resumes the shard files (a failed or cancelled task's finished cells are kept).
#   TOPKP        the binary the jobs run (default: build/topkp of this checkout)
#   TOPKP_GRES   the GRES of each array task (default gpu:1; none when the args hold
#                --backend cpu); SBATCH_ARGS: more sbatch options for both jobs (e.g. -p gpu)
set -euo pipefail
me="submit.sh"
here="${BASH_SOURCE[0]%/*}"
[ "$here" != "${BASH_SOURCE[0]}" ] || here=.
here="$(cd "$here" && pwd)" # builtins only: the checks below run before any other command
die() { echo "$me: $1" >&2; exit "${2:-1}"; }
[ $# -ge 3 ] || die "usage: $me CONFIG N OUTDIR [topkp run args...]" 2
config="$1" n="$2" outdir="$3"
shift 3
[ -f "$config" ] || die "no config file '$config'"
[[ "$n" =~ ^[1-9][0-9]*$ ]] || die "N must be a whole number >= 1 (the number of shards), not '$n'" 2
command -v sbatch >/dev/null || die "sbatch not found: run this on a Slurm login node"
topkp="${TOPKP:-$here/../../build/topkp}"
[ -x "$topkp" ] || die "no topkp binary at '$topkp' (build it with make, or set TOPKP)"
topkp="$(realpath "$topkp")"
config="$(realpath "$config")"
[ ! -e "$outdir/merged.h5" ] ||
    die "'$outdir/merged.h5' exists: this sweep was merged already (move it, or pick another OUTDIR)"
# The config and the arguments are checked here, before anything is queued or made.
"$topkp" run "$config" --shard "0/$n" -o "$outdir/shard-0.h5" --dry-run "$@" >/dev/null ||
    die "topkp refused the config or the arguments (above); nothing was submitted"
mkdir -p "$outdir/logs" || die "cannot create '$outdir/logs'"
outdir="$(realpath "$outdir")"
gres="${TOPKP_GRES:-gpu:1}"
[ -n "${TOPKP_GRES:-}" ] || [[ " $* " != *" --backend cpu "* ]] || gres=none
read -r -a extra <<<"${SBATCH_ARGS:-}"
export TOPKP="$topkp"
sweep="$(sbatch --parsable "${extra[@]}" --array="0-$((n - 1))" --gres="$gres" \
    --output="$outdir/logs/shard-%a.log" "$here/sweep.sbatch" "$config" "$outdir" "$@")" ||
    die "sbatch refused the sweep array (above)"
sweep="${sweep%%;*}"
merge="$(sbatch --parsable "${extra[@]}" --dependency="afterok:$sweep" --kill-on-invalid-dep=yes \
    --output="$outdir/logs/merge.log" "$here/merge.sbatch" "$outdir" "$n")" || {
    scancel "$sweep" 2>/dev/null || true
    die "sbatch refused the merge job (above); cancelled the sweep array $sweep"
}
merge="${merge%%;*}"
echo "sweep_job=$sweep"
echo "merge_job=$merge"
echo "$me: $n tasks in array $sweep, then merge $merge -> $outdir/merged.h5 (logs in $outdir/logs)" >&2
