#!/usr/bin/env bash
#===- run_comm_test.sh - Launch a comm scenario and check how it ended ----===#
#
#   run_comm_test.sh mpi NP LIMIT EXPECT PATTERN [VAR=VALUE...] -- PROGRAM ARGS...
#       NP processes under mpirun on loopback; the whole run must end within
#       LIMIT seconds.
#   run_comm_test.sh local RC PATTERN [VAR=VALUE...] -- PROGRAM ARGS...
#       one process, no launcher; it must exit with RC.
#   run_comm_test.sh pair LIMIT EXPECT PATTERN [VAR=VALUE...] -- PROGRAM ARGS...
#       two processes with RANK/WORLD_SIZE/LOCAL_RANK and a rendezvous file
#       in a fresh temporary directory (the NCCL backend without MPI).
#
# EXPECT is ok (exit 0 everywhere) or fail (non-zero, and not a timeout).
# PATTERN is an extended regex the combined output must match ("." for any).
# Every run starts from an environment without launcher variables (the test
# may itself run under mpirun, srun or torchrun), plus the VAR=VALUEs. Each
# process writes its pid to TGC_TEST_PIDDIR; none may outlive the launch.
# Exit 77 (skipped, with the reason) when mpirun or MPI is missing.
#
# Environment: TGC_TEST_MPIEXEC (mpirun path), TGC_TEST_HAVE_MPI (ON/OFF),
# TGC_TEST_MPIRUN_FLAGS (extra mpirun arguments).
#
#===----------------------------------------------------------------------===#
set -u

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

launcher_vars=(
  OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK
  PMI_RANK PMI_SIZE MPI_LOCALRANKID PMIX_RANK
  RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK
  TORCHELASTIC_RUN_ID TORCHELASTIC_RESTART_COUNT MASTER_ADDR MASTER_PORT
  SLURM_PROCID SLURM_NTASKS SLURM_STEP_NUM_TASKS SLURM_LOCALID SLURM_JOB_ID
  SLURM_STEP_ID SLURM_STEPID SLURM_RESTART_COUNT
  TGC_RUN_ID TGC_RENDEZVOUS TGC_MPI_TIMEOUT TGC_NCCL_TIMEOUT
)
clean_env=(env)
for v in "${launcher_vars[@]}"; do clean_env+=(-u "$v"); done

mode=${1:?mode}; shift
case $mode in
  mpi) np=$1 limit=$2 expect=$3 pattern=$4; shift 4 ;;
  local) rc_want=$1 pattern=$2 limit=60 expect=rc; shift 2 ;;
  pair) limit=$1 expect=$2 pattern=$3; shift 3 ;;
  *) fail "unknown mode '$mode'" ;;
esac
vars=()
while (($#)) && [[ $1 != -- ]]; do vars+=("$1"); shift; done
[[ ${1:-} == -- ]] || fail "no -- before the program"
shift

work=$(mktemp -d "${TMPDIR:-/tmp}/tgc-comm-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/pids"
vars+=("TGC_TEST_PIDDIR=$work/pids")
out=$work/output

start=$(date +%s%N)
case $mode in
  mpi)
    [[ ${TGC_TEST_HAVE_MPI:-OFF} =~ ^(ON|TRUE|1|YES)$ ]] ||
      skip "the runtime was built without MPI (install libopenmpi-dev)"
    mpiexec=${TGC_TEST_MPIEXEC:-}
    [[ -n $mpiexec && -x $mpiexec ]] || mpiexec=$(command -v mpirun || true)
    [[ -n $mpiexec ]] || skip "mpirun not found (install openmpi-bin)"
    flags=()
    if "$mpiexec" --version 2>&1 | grep -q "Open MPI"; then
      # Loopback TCP: works in containers (no shared-memory or ptrace
      # limits) and never leaves the machine.
      flags+=(--oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo
              --mca oob_tcp_if_include lo)
      [[ $(id -u) == 0 ]] && flags+=(--allow-run-as-root)
    fi
    # shellcheck disable=SC2206
    flags+=(${TGC_TEST_MPIRUN_FLAGS:-})
    echo "+ ${vars[*]} $mpiexec ${flags[*]} -np $np $*"
    timeout -k 5 "$limit" "${clean_env[@]}" "${vars[@]}" \
      "$mpiexec" "${flags[@]}" -np "$np" "$@" >"$out" 2>&1
    rc=$?
    ;;
  local)
    echo "+ ${vars[*]} $*"
    timeout -k 5 "$limit" "${clean_env[@]}" "${vars[@]}" "$@" >"$out" 2>&1
    rc=$?
    ;;
  pair)
    run_id="test-$$-$RANDOM"
    pids=()
    for r in 0 1; do
      echo "+ RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r ${vars[*]} $*"
      timeout -k 5 "$limit" "${clean_env[@]}" RANK=$r WORLD_SIZE=2 \
        LOCAL_RANK=$r TGC_RENDEZVOUS="$work/rendezvous" TGC_RUN_ID="$run_id" \
        "${vars[@]}" "$@" >"$out.$r" 2>&1 &
      pids+=($!)
    done
    wait "${pids[0]}"; rc0=$?
    wait "${pids[1]}"; rc1=$?
    for r in 0 1; do sed "s/^/[$r] /" "$out.$r"; done >"$out"
    if ((rc0 == 77 && rc1 == 77)); then cat "$out"; skip "see above"; fi
    echo "exit codes: rank 0: $rc0, rank 1: $rc1"
    [[ -e $work/rendezvous ]] && ((rc0 == 0 && rc1 == 0)) &&
      { cat "$out"; fail "rank 0 left the rendezvous file behind"; }
    if ((rc0 == 124 || rc0 == 137 || rc1 == 124 || rc1 == 137)); then
      rc=124
    elif [[ $expect == ok ]]; then
      rc=$((rc0 | rc1))
    elif ((rc0 != 0 && rc1 != 0)); then
      rc=1
    else
      rc=0 # one rank succeeded where all should have failed
    fi
    ;;
esac
end=$(date +%s%N)

cat "$out"
elapsed_ms=$(((end - start) / 1000000))
printf 'exit code %d after %d.%03d s\n' "$rc" $((elapsed_ms / 1000)) $((elapsed_ms % 1000))

# No rank may outlive the launch. A zombie (dead, not yet reaped by
# whoever inherited it from the launcher) counts as ended; one that is still
# exiting gets a moment.
running() {
  local state
  # The state follows the parenthesised command name in /proc/PID/stat.
  state=$(sed -E 's/.*\) (.).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z ]]
}
for f in "$work"/pids/*.pid; do
  [[ -e $f ]] || continue
  pid=$(<"$f")
  for _ in $(seq 50); do running "$pid" || break; sleep 0.1; done
  if running "$pid"; then
    kill -9 "$pid" 2>/dev/null
    fail "process $pid is still running after the launch ended"
  fi
done

case $expect in
  ok)
    ((rc == 124 || rc == 137)) && fail "the run did not end within $limit s"
    ((rc == 0)) || fail "expected exit 0, got $rc" ;;
  fail)
    ((rc == 124 || rc == 137)) && fail "the run did not end within $limit s"
    ((rc != 0)) || fail "expected a non-zero exit, got 0" ;;
  rc)
    ((rc == 124 || rc == 137)) && fail "the run did not end within $limit s"
    ((rc == rc_want)) || fail "expected exit $rc_want, got $rc" ;;
esac
if [[ -n $pattern ]] && ! grep -Eq -- "$pattern" "$out"; then
  fail "the output does not match /$pattern/"
fi
echo "PASS"
