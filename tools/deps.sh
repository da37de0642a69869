# Sourced by tools/test.sh and tools/main-job.sh: installs the Debian packages wick builds
# with, when any is missing and we are root. The CUDA toolkit is not a Debian package here:
# it is used when /usr/local/cuda (or nvcc on PATH) is present.
wick_packages=(cmake ninja-build g++ pkg-config libeigen3-dev libgtest-dev libbenchmark-dev zlib1g-dev libgloo-dev libboost-context-dev dataset-fashion-mnist)

ensure_packages() {
  local missing=()
  for p in "${wick_packages[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "wick: missing Debian packages: ${missing[*]} (run as root to install them, or install them yourself)" >&2
    return 1
  fi
  echo "wick: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# Puts the CUDA toolkit's nvcc on PATH when it is installed in the usual place.
find_cuda() {
  if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  fi
}

# Packages that add checks or features but that a build does without (ImageFolder's PNG
# decoding; the consumer test's run on emulated CPUs without AVX-512; fortunes, the text
# examples/gpt trains on by default; openmpi-bin, whose mpirun starts an example in a
# test): installed when they
# can be, and their absence only reported.
ensure_optional_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" && continue
    if [ "$(id -u)" -ne 0 ] || ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1; then
      echo "wick: optional package $p is not installed (and could not be): what it adds is skipped" >&2
    fi
  done
}
