#!/usr/bin/env bash
# Command 2: set up what the game and the tests need (./scripts/setup.sh test) and run the whole test
# suite (unit tests, the integration tests with the scripted LLM, the real model and a real
# OpenAI-compatible server, and the real window under Xvfb).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/simulacra/target}"
# The build setting set-up and the game's command use (so that neither rebuilds the other's build).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
./scripts/setup.sh test
runner=(cargo test --locked)
if command -v cargo-nextest >/dev/null 2>&1; then
  runner=(cargo nextest run --locked --no-fail-fast)
fi
if [ -z "${DISPLAY:-}" ]; then
  # A real X server for the windowed test; llvmpipe (Mesa) renders without a GPU.
  exec xvfb-run -a -s "-screen 0 1280x720x24" "${runner[@]}" "$@"
fi
exec "${runner[@]}" "$@"
