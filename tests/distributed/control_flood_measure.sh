#!/usr/bin/env bash
# Measures the driver's rendezvous under a flood of token-less clients, as separate
# processes on loopback (the numbers in docs/distributed.md, "The rendezvous under a flood"):
#   tests/distributed/control_flood_measure.sh BUILD SILENT CLOSERS TALKERS SECONDS FOLLOWER_AT
# starts `wick_control_flood driver`, floods it for SECONDS with SILENT silent clients,
# CLOSERS connect-and-close loops and TALKERS bogus Hellos (each reconnecting at once),
# prints the driver's RSS, threads and memory maps every second and their peaks, and starts
# the real follower FOLLOWER_AT seconds in (-1: after the flood).
set -u
if [ $# -ne 6 ]; then sed -n '2,9p' "$0"; exit 2; fi
build=$1 silent=$2 closers=$3 talkers=$4 secs=$5 at=$6
tool=$build/tests/distributed/wick_control_flood
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$tool" driver $(( (secs + 10) * 1000 )) > "$out" &
driver=$!
for _ in $(seq 50); do grep -q '^port' "$out" && break; sleep 0.1; done
port=$(awk '/^port/ {print $2}' "$out")
"$tool" attack "$port" "$silent" "$closers" "$talkers" "$secs" &
attack=$!
peak_rss=0 peak_threads=0 peak_maps=0
for t in $(seq "$secs"); do
  sleep 1
  [ "$t" = "$at" ] && "$tool" follower "$port" &
  rss=$(awk '/^VmRSS/ {print $2}' /proc/$driver/status 2>/dev/null)
  threads=$(awk '/^Threads/ {print $2}' /proc/$driver/status 2>/dev/null)
  maps=$(wc -l 2>/dev/null < /proc/$driver/maps)
  [ -n "$rss" ] && [ -n "$maps" ] || break  # the driver is done (or gone)
  (( rss > peak_rss )) && peak_rss=$rss
  (( threads > peak_threads )) && peak_threads=$threads
  (( maps > peak_maps )) && peak_maps=$maps
  echo "t=${t}s driver: RSS ${rss} kB, ${threads} threads, ${maps} maps"
done
echo "peak: RSS ${peak_rss} kB, ${peak_threads} threads, ${peak_maps} maps"
wait $attack
[ "$at" = -1 ] && "$tool" follower "$port"
wait $driver
cat "$out"
