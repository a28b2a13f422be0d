#!/usr/bin/env bash
# What building llama.cpp's Vulkan backend (the cargo feature `vulkan`) needs, in a folder the build
# is pointed at with VULKAN_SDK: the Vulkan and SPIR-V headers, the loader to link, and glslc.
# Headers of Vulkan 1.3.261 or later are needed. Debian 12's are 1.3.239, so there Debian 13's header
# packages are fetched by apt, from the mirror the system already uses, with a package list of apt's
# own in a temporary folder, and unpacked into the folder: nothing of the system is replaced.
# Prints the folder.
#   usage: VULKAN_SDK=$(scripts/vulkan-sdk.sh) cargo build --features vulkan
set -euo pipefail
sdk="$HOME/.cache/simulacra/vulkan-sdk"
if [ -f "$sdk/ready" ]; then echo "$sdk"; exit 0; fi
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
missing=()
for p in glslc libvulkan1; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] || $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
new_enough() { grep -qs VK_EXT_layer_settings "$1/vulkan/vulkan_core.h"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$sdk" && mkdir -p "$sdk/lib" "$sdk/bin"
if apt-cache show libvulkan-dev 2>/dev/null | grep -q '^Version: 1\.4'; then
  # The system's own are new enough (Debian 13 and later).
  $sudo apt-get install -y -qq --no-install-recommends libvulkan-dev spirv-headers >&2
  ln -s /usr/include "$sdk/include"
  ln -s /usr/share "$sdk/share"
else
  mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 2>/dev/null \
    | awk '$3 == "main" && $2 !~ /-/ {print $1; exit}')
  [ -n "$mirror" ] || { echo "vulkan-sdk: no Debian mirror found in apt's sources" >&2; exit 1; }
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/debs" "$tmp/x"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" >"$tmp/sources.list"
  apt_tmp=(-o Dir::Etc::sourcelist="$tmp/sources.list" -o Dir::Etc::sourceparts=-
    -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache" -o APT::Sandbox::User=root)
  apt-get "${apt_tmp[@]}" update >&2
  (cd "$tmp/debs" && apt-get "${apt_tmp[@]}" download libvulkan-dev spirv-headers >&2)
  for d in "$tmp"/debs/*.deb; do dpkg-deb -x "$d" "$tmp/x"; done
  cp -r "$tmp/x/usr/include" "$sdk/include"
  cp -r "$tmp/x/usr/share" "$sdk/share"
fi
new_enough "$sdk/include" || { echo "vulkan-sdk: the Vulkan headers in $sdk/include are older than 1.3.261" >&2; exit 1; }
ln -s "$(ls /usr/lib/*-linux-gnu/libvulkan.so.1 | head -1)" "$sdk/lib/libvulkan.so"
ln -s "$(command -v glslc)" "$sdk/bin/glslc"
touch "$sdk/ready"
echo "$sdk"
