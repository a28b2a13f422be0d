#!/usr/bin/env bash
# Command 1: set up what the game needs (./scripts/setup.sh game) and open the game on Smallville with the
# embedded default model. Extra arguments go to `simulacra play` (e.g. --scenario the_ville_n3, --speed 4).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/simulacra/target}"
# The build setting set-up and the test command use (so that neither rebuilds the other's build).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
./scripts/setup.sh game
# On a machine with a GPU, the build setup.sh made with llama.cpp's Vulkan backend (scripts/gpu.sh).
gpu_feature="$(./scripts/gpu.sh)"
if [ -n "$gpu_feature" ]; then
  export VULKAN_SDK="$HOME/.cache/simulacra/vulkan-sdk"
  exec cargo run --locked --features "$gpu_feature" --bin simulacra -- play "$@"
fi
exec cargo run --locked --bin simulacra -- play "$@"
