#!/usr/bin/env bash
# Checks that a default (WICK_NATIVE=OFF) build of wick runs on any x86-64 CPU (issue 23).
#
#   check_portable.sh variant ISA OBJECT   the copy of the matrix product's core built for ISA
#                                          (kernels/cpu/isa/gemm_variant.cpp) defines no symbol
#                                          outside its own names, so the linker cannot hand its
#                                          wide instructions to code that runs on older CPUs
#   check_portable.sh baseline OBJECT...   no instruction in these objects (the library less
#                                          its avx2/avx512 copies) uses a ymm, zmm or mask
#                                          register outside the avx512f/avx2 clones of
#                                          WICK_ISA_CLONES functions (kernels/cpu/isa_clones.h,
#                                          chosen by the loader): nothing but the copies
#                                          chosen at run time needs AVX, AVX2 or AVX-512
set -euo pipefail
mode=${1:-}; shift || true
case $mode in
  variant)
    isa=$1 obj=$2
    # Defined symbols that the linker may merge or pick between objects: global (upper case),
    # weak (W, V) and unique (u) ones.
    [[ -f $obj ]] || { echo "check_portable: no object file '$obj'"; exit 1; }
    # A name that mentions the copy's own namespace (as itself, a template argument or the
    # owner of a static) is that copy's alone; the personality pointer is the same data in
    # every object.
    leaks=$(nm --defined-only "$obj" | awk '$2 ~ /^[A-Zu]$/ {print $3}' | c++filt |
      grep -vE "wick_eigen_$isa::|wick::cpu::$isa::|wick::cpu::gemm_variant_$isa\(\)|^DW\.ref\.__gxx_personality_v0$" || true)
    if [[ -n $leaks ]]; then
      echo "check_portable: the $isa copy of the matrix product ($obj) defines symbols outside its own names;"
      echo "the linker may keep these $isa instructions for every caller:"
      echo "$leaks"
      exit 1
    fi
    echo "check_portable: the $isa copy keeps to itself ($(nm --defined-only "$obj" | wc -l) symbols)"
    ;;
  baseline)
    bad=0
    (($# > 0)) || { echo "check_portable: no objects given"; exit 1; }
    clones=0
    for obj in "$@"; do
      dis=$(objdump -d --no-show-raw-insn "$obj") || { echo "check_portable: objdump failed on '$obj'"; exit 1; }
      # Each instruction prefixed by the function it is in; a target_clones copy's name ends
      # in its target (".avx512f", ".avx2") and may use what that target has.
      wide=$(awk '/^[0-9a-f]+ <.*>:$/ {fn = $2; next} /%(y|z)mm[0-9]|%k[0-7]([^0-9]|$)/ {print fn "\t" $0}' <<<"$dis")
      clones=$((clones + $(grep -cE '^<[^>]*\.(avx512f|avx2)>:' <<<"$wide" || true)))
      hits=$(grep -vE '^<[^>]*\.(avx512f|avx2)>:' <<<"$wide" | grep -c . || true)
      if [[ $hits -gt 0 ]]; then
        echo "check_portable: $obj has $hits instructions on ymm/zmm/mask registers outside ISA clones:"
        grep -vE '^<[^>]*\.(avx512f|avx2)>:' <<<"$wide" | head -5
        bad=1
      fi
    done
    ((bad == 0)) && echo "check_portable: $# objects, no AVX/AVX2/AVX-512 instruction outside the run-time-chosen copies ($clones instructions in ISA clones)"
    exit $bad
    ;;
  *)
    sed -n '2,13p' "$0"
    exit 2
    ;;
esac
