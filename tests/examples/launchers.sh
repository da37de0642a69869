#!/bin/sh
# One wick program started by another launcher for real (issue 49, item 1): examples/two_inputs
# on two ranks under LAUNCHER (torchrun or mpirun) must end with the parameters it ends
# with under wickrun, bit for bit. Exits 77 (ctest's skip) when the launcher is not installed:
# torchrun comes with PyTorch (WICK_TORCHRUN names one outside PATH), mpirun with Debian's
# openmpi-bin, which tools/test.sh installs where it can.
#   launchers.sh torchrun|mpirun WICKRUN TWO_INPUTS OUT
set -u
launcher=$1 wickrun=$2 prog=$3 out=$4
fail() { echo "FAIL ($launcher): $*"; exit 1; }
case $launcher in
  torchrun) exe=${WICK_TORCHRUN:-torchrun} ;;
  mpirun) exe=mpirun ;;
  *) fail "unknown launcher" ;;
esac
command -v "$exe" >/dev/null 2>&1 || { echo "$launcher is not installed: skipped"; exit 77; }
rm -rf "$out"
mkdir -p "$out"
"$prog" --make-data "$out/data" --examples 2000 --features 16 > /dev/null || fail "--make-data"
args="--data $out/data --epochs 1 --workers 0 --batch-size 64 --quiet"
# shellcheck disable=SC2086
"$wickrun" --nproc 2 "$prog" $args --checkpoint "$out/wickrun.ckpt" > "$out/wickrun.log" 2>&1 ||
  { cat "$out/wickrun.log"; fail "the run under wickrun"; }
want=$(grep '^parameters ' "$out/wickrun.log")
[ -n "$want" ] || { cat "$out/wickrun.log"; fail "no parameters line under wickrun"; }
port=$((30000 + $$ % 20000))
case $launcher in
  # torchrun's agent serves its own store on --master-port and tells the ranks
  # (TORCHELASTIC_USE_AGENT_STORE=True): wick's control channel takes the next port.
  # --no-python: the program is an executable, not a Python script.
  torchrun)
    # shellcheck disable=SC2086
    WICK_JOB_TOKEN=launchers-test "$exe" --nproc-per-node 2 --master-port $port --no-python \
      "$prog" $args --checkpoint "$out/torchrun.ckpt" > "$out/torchrun.log" 2>&1 ;;
  # Open MPI: every rank's OMPI_COMM_WORLD_* read as RANK and the others; MASTER_ADDR passed on.
  # `--mca plm isolated`: one machine, so no ssh is needed (Open MPI looks for one otherwise).
  mpirun)
    # shellcheck disable=SC2086
    WICK_JOB_TOKEN=launchers-test MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$exe" --allow-run-as-root --oversubscribe \
      --mca plm isolated -np 2 -x MASTER_ADDR -x MASTER_PORT -x WICK_JOB_TOKEN "$prog" $args --checkpoint "$out/mpirun.ckpt" \
      > "$out/mpirun.log" 2>&1 ;;
esac
[ $? -eq 0 ] || { cat "$out/$launcher.log"; fail "the run under $launcher"; }
got=$(grep '^parameters ' "$out/$launcher.log" | head -1)
[ "$got" = "$want" ] || { cat "$out/$launcher.log"; fail "'$got', under wickrun '$want'"; }
echo "$launcher: the parameters equal wickrun's ($got)"
