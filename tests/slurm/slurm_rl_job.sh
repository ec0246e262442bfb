#!/usr/bin/env bash
# A real Slurm job end to end: start a one-node Slurm (scripts/slurm-local.sh) in a temporary
# directory, submit slurm/tensorhub-rl.sbatch (1 trainer + 2 rollouts, 16 MiB, 3 versions,
# --overcommit), wait for it, check its state, the "every pull verified" summary and that each
# rollout reached the last version. Every daemon it started is stopped on exit, pass or fail.
#
# usage: slurm_rl_job.sh TENSORHUB_BIN SOURCE_DIR
# Exit 77 (ctest: skipped) when not root or Slurm/munge is not installed.
# Environment: TENSORHUB_SLURM_TEST_TEMPLATE=auto|rl|demo (default auto: the RL template when the
# binary has 'publish' and 'pull', else the demo template), TENSORHUB_SLURM_TEST_KEEP=1 keeps the
# state directory (config, daemon logs, job output).
set -euo pipefail

bin=$(realpath "${1:?usage: slurm_rl_job.sh TENSORHUB_BIN SOURCE_DIR}")
src=$(realpath "${2:?usage: slurm_rl_job.sh TENSORHUB_BIN SOURCE_DIR}")
status=1
skip() {
  status=0
  echo "SKIP: $*"
  exit 77
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

[[ $(id -u) -eq 0 ]] || skip "the Slurm test needs root (slurmd runs the job's tasks)"
for b in slurmctld slurmd munged mungekey sbatch srun sinfo squeue scontrol scancel; do
  command -v "$b" >/dev/null ||
    skip "$b not found (optional: apt-get install slurmctld slurmd slurm-client munge)"
done
[[ -x "$bin" ]] || {
  echo "FAIL: $bin is not an executable"
  exit 1
}

template=${TENSORHUB_SLURM_TEST_TEMPLATE:-auto}
why="TENSORHUB_SLURM_TEST_TEMPLATE=$template"
if [[ "$template" == auto ]]; then
  template=demo
  why="$bin has no 'publish'/'pull'"
  "$bin" publish --help >/dev/null 2>&1 && "$bin" pull --help >/dev/null 2>&1 && template=rl
fi
[[ "$template" == rl || "$template" == demo ]] || {
  echo "FAIL: TENSORHUB_SLURM_TEST_TEMPLATE must be auto, rl or demo"
  exit 1
}

# Nothing from an enclosing Slurm job (or the user's defaults) may steer this one.
while read -r v; do unset "$v"; done < <(compgen -e | grep -E '^(SLURM_|SBATCH_|SRUN_|SALLOC_)' || true)

t_start=$(now)
dir=$(mktemp -d "${TMPDIR:-/tmp}/tensorhub-slurm-test.XXXXXX")
job=
shown=0 # job output printed already
cleanup() {
  if ((status != 0)); then
    if [[ -n "$job" ]]; then
      echo "----- scontrol show job $job"
      scontrol show job "$job" 2>&1 || true
    fi
    for f in "$dir"/job-*.out; do
      if [[ ! -e "$f" ]] || ((shown)); then continue; fi
      echo "----- job output $f"
      cat "$f"
    done
    for f in "$dir/log/slurmctld.log" "$dir/log/slurmd.log" "$dir/munge/munged.log"; do
      [[ -s "$f" ]] || continue
      echo "----- last lines of $f"
      tail -n 20 "$f"
    done
  fi
  local t
  t=$(now)
  "$src/scripts/slurm-local.sh" stop --dir "$dir" || true
  echo "slurm test: daemons stopped in $(since "$t") s; total $(since "$t_start") s"
  if [[ "${TENSORHUB_SLURM_TEST_KEEP:-0}" == 1 ]]; then
    echo "kept $dir"
  else
    rm -rf "$dir"
  fi
}
trap cleanup EXIT
trap 'exit 1' TERM INT # ctest's timeout: still stop the daemons

t0=$(now)
exports=$("$src/scripts/slurm-local.sh" start --dir "$dir" --timeout 60)
t_idle=$(since "$t0")
eval "$exports"
echo "slurm test: one-node Slurm up, node idle ${t_idle} s after 'slurm-local.sh start'"
srun --mpi=list 2>&1 | grep -qw pmix || skip "this Slurm has no PMIx plugin (srun --mpi=list)"

# Small job: 3 tasks (1 trainer + 2 rollouts) on a 2-core node, hence --overcommit.
cd "$src"
export TENSORHUB_BIN=$bin TENSORHUB_ROOT=$src
versions=3
if [[ "$template" == rl ]]; then
  rollouts=(1 2) # task ids of the pull ranks
  pull_args=()
  "$bin" pull --help 2>&1 | grep -q -- --check-pattern && pull_args=(--pull-args --check-pattern)
  submit=(--ntasks=3 slurm/tensorhub-rl.sbatch --trainers 1 --size 16MiB --tensors 8 --versions "$versions"
    --interval 1 --generate 0.2 "${pull_args[@]}")
else
  echo "slurm test: NOTE: $why: submitting the demo template instead of the RL one"
  rollouts=()
  submit=(--ntasks=4 slurm/tensorhub-demo.sbatch --trainers 1 --size 16MiB --tensors 8 --versions "$versions")
fi
t1=$(now)
job=$(sbatch --parsable --overcommit --time=3 --output="$dir/job-%j.out" "${submit[@]}")
job=${job%%;*}
echo "slurm test: submitted job $job: sbatch --overcommit ${submit[*]}"

state=
deadline=$(($(date +%s) + 180))
while :; do
  state=$(scontrol show job -o "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  case "$state" in
    PENDING | CONFIGURING | RUNNING | COMPLETING | "") ;;
    *) break ;;
  esac
  if (($(date +%s) >= deadline)); then
    echo "FAIL: job $job still ${state:-unknown} after 180 s: cancelling it"
    scancel "$job" || true
    exit 1
  fi
  sleep 0.5
done
exit_code=$(scontrol show job -o "$job" | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p')
t_job=$(since "$t1")
out="$dir/job-$job.out"
echo "slurm test: job $job $state (ExitCode=$exit_code) after ${t_job} s; its output:"
cat "$out"
shown=1

[[ "$state" == COMPLETED && "$exit_code" == 0:0 ]] || {
  echo "FAIL: job $job ended $state with ExitCode=$exit_code"
  exit 1
}
grep -q "every pull verified" "$out" || {
  echo "FAIL: no 'every pull verified' summary in $out"
  exit 1
}
# Every rollout followed the trainer to the last version (srun --label prefixes "TASK: ").
for r in "${rollouts[@]}"; do
  grep -Eq "^ *$r: .*pulled.* v$versions\b" "$out" || {
    echo "FAIL: rollout task $r never reports pulling v$versions in $out"
    exit 1
  }
done
status=0
echo "slurm test: ok ($template template): node idle ${t_idle} s, job ${t_job} s"
