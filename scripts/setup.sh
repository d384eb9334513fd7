#!/usr/bin/env bash
#===- setup.sh - Install every Debian package tgc needs ------------------===#
#
# Idempotent: packages already present are skipped, so `make test` can call
# this on every run. Needs root (or sudo) on a Debian 12 machine.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ pkg-config
  # LLVM/MLIR 22: headers, static libraries, lit and FileCheck
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # model files and manifests
  flatbuffers-compiler libflatbuffers-dev
  # runtime: GEMMs, threads, collectives
  libopenblas-dev libomp-dev openmpi-bin libopenmpi-dev
  # runtime: JSON files (safetensors headers, checkpoint indexes, the metrics
  # log), header-only
  nlohmann-json3-dev
  # tg-data: gzipped inputs, GPT-2's pre-tokenizer regex
  zlib1g-dev libpcre2-dev
  # ONNX models (tgc model.onnx): protobuf and ONNX's shape inference
  libonnx-dev libprotobuf-dev
  # tests
  python3-onnx libgtest-dev python3 python3-numpy python3-torch python3-sklearn
  # ILP solver for sharding and remat plans
  coinor-cbc
  # real text for the demo's language model
  python3.11
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) != 0 ]]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
