#!/usr/bin/env bash
# Checks that the C++ and CUDA sources follow .clang-format (clang-format-14):
#   tools/check_format.sh                 every tracked source file except those listed in
#                                         tools/format_pending.txt (the ctest source_format)
#   tools/check_format.sh --changed [REF] the files changed since REF (default HEAD: what is
#                                         modified or staged), listed or not
#   tools/check_format.sh --fix [...]     rewrites the files instead of reporting them
# tools/format_pending.txt names the files written before .clang-format that nobody has
# touched since; the check fails when one of them already follows the style (take it off the
# list), so the list only shrinks. A file comes off it when someone changes it: run
# `tools/check_format.sh --changed --fix` before committing.
# Exits 77 (ctest's skip) without clang-format-14 or outside a git checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
changed=""
while [ $# -gt 0 ]; do
  case $1 in
    --fix) fix=1 ;;
    --changed)
      changed=HEAD
      if [ $# -gt 1 ] && [[ $2 != --* ]]; then changed=$2; shift; fi ;;
    *) echo "check_format.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
format=$(command -v clang-format-14 || true)
if [ -z "$format" ] || ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "check_format.sh: needs clang-format-14 and a git checkout; skipped" >&2
  exit 77
fi
patterns=('*.h' '*.cpp' '*.cu' '*.cuh')
pending=()
if [ -n "$changed" ]; then
  mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$changed" -- "${patterns[@]}")
else
  mapfile -t pending < <(grep -v '^#' tools/format_pending.txt | grep .)
  mapfile -t files < <(git ls-files -- "${patterns[@]}" | grep -vxF -f <(printf '%s\n' "${pending[@]}" ''))
fi
if [ $fix -eq 1 ]; then
  [ ${#files[@]} -eq 0 ] || printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 32 "$format" -i
  exit 0
fi
report=$(mktemp)
trap 'rm -f "$report"' EXIT
status=0
# --dry-run -Werror names each file and line that differs from the style.
if [ ${#files[@]} -gt 0 ] &&
   ! printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 32 "$format" --dry-run -Werror 2>"$report"; then
  head -40 "$report" >&2
  errors=$(grep ': error: ' "$report" || true)
  echo "check_format.sh: $(wc -l <<<"$errors") places differ from .clang-format in" \
    "$(cut -d: -f1 <<<"$errors" | sort -u | wc -l) files; tools/check_format.sh --fix rewrites them" >&2
  status=1
fi
# A listed file that already follows the style comes off the list.
for f in "${pending[@]}"; do
  if [ ! -e "$f" ]; then
    echo "check_format.sh: tools/format_pending.txt lists $f, which does not exist: take it off" >&2
    status=1
  elif "$format" --dry-run -Werror "$f" 2>/dev/null; then
    echo "check_format.sh: $f follows .clang-format now: take it off tools/format_pending.txt" >&2
    status=1
  fi
done
[ $status -eq 0 ] && echo "check_format.sh: ${#files[@]} files follow .clang-format (${#pending[@]} written before it, untouched since)"
exit $status
