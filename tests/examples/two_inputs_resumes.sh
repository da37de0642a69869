#!/bin/sh
# The two-input example (issue 23): on 2 ranks through wickrun with 4 DataLoader workers
# each, a run stopped mid-epoch and resumed from its checkpoint ends with the parameters of
# an uninterrupted run, bit for bit; and the data set, memory-mapped, is larger than the
# data segment the ranks are allowed (RLIMIT_DATA), which reading it into memory would
# need.
#   two_inputs_resumes.sh WICKRUN TWO_INPUTS OUT
set -u
wickrun=$1 prog=$2 out=$3
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
# 10000 examples of 4096 + 8 float32 columns: 164 MB of .npy files, against a 128 MB data
# segment per process. Thread stacks count in it (glibc makes them as large as the stack
# limit, 8 MB by default): with 2 MB stacks the ranks' dozen threads leave room for batches.
"$prog" --make-data "$out/data" --examples 10000 --features 4096 || fail "--make-data"
limit=$((128 * 1024 * 1024))
ulimit -s 2048
run() {  # run LOG [options]: 2 ranks, 2 epochs (unless options say otherwise), under the data limit
  log=$1
  shift
  prlimit --data=$limit:$limit -- "$wickrun" --nproc 2 "$prog" --data "$out/data" --epochs 2 --workers 4 \
    --batch-size 64 --checkpoint-every 20 --quiet "$@" > "$log" 2>&1
}
run "$out/straight.log" --checkpoint "$out/straight.ckpt" || { cat "$out/straight.log"; fail "the uninterrupted run"; }
# 9000 training examples / (2 ranks x 64) = 71 steps per epoch (the last batch short): stop
# in epoch 2 at step 90, resume from the checkpoint of step 80 (batch 9 of epoch 2).
run "$out/stopped.log" --checkpoint "$out/run.ckpt" --stop-after 90 || { cat "$out/stopped.log"; fail "the stopped run"; }
grep -q "stopped after 90 steps" "$out/stopped.log" || { cat "$out/stopped.log"; fail "the run did not stop"; }
run "$out/resumed.log" --checkpoint "$out/run.ckpt" || { cat "$out/resumed.log"; fail "the resumed run"; }
grep -q "resumed from .*epoch 2, batch 9, step 80" "$out/resumed.log" || { cat "$out/resumed.log"; fail "no mid-epoch resume"; }
want=$(grep '^parameters ' "$out/straight.log")
got=$(grep '^parameters ' "$out/resumed.log")
[ -n "$want" ] && [ "$want" = "$got" ] || fail "resumed '$got', uninterrupted '$want'"
# The same binary without wickrun, under the variables srun and mpirun set (rank, size,
# local rank, the node list or MASTER_ADDR): the same parameters as under wickrun.
launch() {  # launch NAME VAR=VALUE...: two ranks; each rank's variables from rank_env
  name=$1
  shift
  pids=
  for r in 0 1; do
    env "$@" $(rank_env $r) WICK_JOB_TOKEN=two-inputs-test "$prog" --data "$out/data" --epochs 2 --workers 4 \
      --batch-size 64 --checkpoint "$out/$name.ckpt" --checkpoint-every 20 --quiet > "$out/$name.$r.log" 2>&1 &
    pids="$pids $!"
  done
  wait_ok=0
  for pid in $pids; do wait "$pid" || wait_ok=1; done
  [ $wait_ok -eq 0 ] || { cat "$out/$name.0.log" "$out/$name.1.log"; fail "$name: a rank failed"; }
  got_launch=$(grep '^parameters ' "$out/$name.0.log")
  [ "$got_launch" = "$want" ] || fail "$name: '$got_launch', under wickrun '$want'"
}
job_id=$(( $$ % 20000 ))
rank_env() { echo SLURM_PROCID=$1 SLURM_LOCALID=$1; }
launch srun SLURM_STEP_NUM_TASKS=2 SLURM_STEP_NODELIST=localhost SLURM_JOB_ID=$job_id
rank_env() { echo OMPI_COMM_WORLD_RANK=$1 OMPI_COMM_WORLD_LOCAL_RANK=$1; }
launch mpirun OMPI_COMM_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(( 40000 + $$ % 20000 ))
# The same through fit's loop (train_in_group) and a step of the example's own: one epoch,
# then a second run resuming from the epoch's checkpoint, against two epochs in one run.
run "$out/fit-straight.log" --loop fit --checkpoint "$out/fit-straight.ckpt" || { cat "$out/fit-straight.log"; fail "fit, uninterrupted"; }
run "$out/fit-first.log" --loop fit --checkpoint "$out/fit.ckpt" --epochs 1 || { cat "$out/fit-first.log"; fail "fit, first epoch"; }
run "$out/fit-resumed.log" --loop fit --checkpoint "$out/fit.ckpt" || { cat "$out/fit-resumed.log"; fail "fit, resumed"; }
want_fit=$(grep '^parameters ' "$out/fit-straight.log")
got_fit=$(grep '^parameters ' "$out/fit-resumed.log")
[ -n "$want_fit" ] && [ "$want_fit" = "$got_fit" ] || fail "fit: resumed '$got_fit', uninterrupted '$want_fit'"
grep -q '^validation accuracy ' "$out/fit-straight.log" || fail "fit: no validation accuracy metric"
# The limit is real: reading the data into memory fails under it.
data_bytes=$(du -cb "$out/data"/*.npy | tail -1 | cut -f1)
[ "$data_bytes" -gt "$limit" ] || fail "the data ($data_bytes bytes) is not larger than the limit ($limit)"
if prlimit --data=$limit:$limit -- python3 -c "open('$out/data/left.npy','rb').read()" 2>/dev/null; then
  fail "reading left.npy into memory worked under the limit: the test proves nothing"
fi
echo "two_inputs: srun-like and mpirun-like starts gave wickrun's parameters; own loop resumed mid-epoch to the same parameters ($got), fit resumed after an epoch to the same ($got_fit); $data_bytes bytes of data under a $limit-byte data limit"
