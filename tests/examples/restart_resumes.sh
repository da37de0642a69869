#!/bin/sh
# wickrun --max-restarts with the mnist example (issue 14): rank 1 is killed (SIGKILL) in
# the second epoch; wickrun starts both ranks again, they resume from the checkpoint of
# epoch 1, and the final model is the one an uninterrupted run with the same checkpoints
# writes, bit for bit.
#   restart_resumes.sh WICKRUN MNIST DATA OUT
set -u
wickrun=$1 mnist=$2 data=$3 out=$4
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; cat "$out/log" 2>/dev/null; exit 1; }
train() {  # train CHECKPOINT_DIR OUT_DIR [wickrun options]; replaces the (sub)shell
  ckpt=$1 dest=$2
  shift 2
  exec "$wickrun" --nproc 2 "$@" "$mnist" --data "$data" --model cnn --epochs 8 --batch-size 32 --validation-size 100 \
    --device cpu --quiet --checkpoint-dir "$ckpt" --out "$dest"
}

(train "$out/straight-ckpt" "$out/straight") > "$out/straight.log" 2>&1 || { cat "$out/straight.log"; fail "the uninterrupted run failed"; }

train "$out/ckpt" "$out/restarted" --max-restarts 1 > "$out/log" 2>&1 &
job=$!
# The first checkpoint appears at the end of epoch 1 (written under a temporary name and
# renamed, so a visible file is complete): kill rank 1 then, in epoch 2.
killed=no
for _ in $(seq 1 3000); do
  if [ -e "$out/ckpt/mnist-cnn.ckpt" ]; then
    # wickrun's children are the ranks' guards; each rank is its guard's child.
    for p in $(for guard in $(pgrep -P "$job"); do pgrep -P "$guard"; done); do
      if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx 'RANK=1'; then
        kill -KILL "$p" && killed=yes
      fi
    done
    break
  fi
  kill -0 "$job" 2>/dev/null || break
  sleep 0.01
done
wait "$job"
status=$?
[ "$killed" = yes ] || fail "rank 1 was not found to kill (the job ended first?)"
[ "$status" = 0 ] || fail "the restarted job exited with $status"
grep -q "rank 1 .* was killed by signal 9" "$out/log" || fail "wickrun did not report rank 1's SIGKILL"
grep -q "restarting every rank (restart 1 of 1)" "$out/log" || fail "wickrun did not restart"
grep -q "resumed from .*mnist-cnn.ckpt after epoch" "$out/log" || fail "the restarted driver did not resume"
cmp "$out/straight/model.safetensors" "$out/restarted/model.safetensors" || fail "the final models differ"
echo "PASS: killed rank 1, restarted, resumed; final model identical to the uninterrupted run's"
