#!/usr/bin/env bash
# Prints the cargo feature that puts the embedded model on this machine's GPU ("vulkan"), or
# nothing: a GPU here is a graphics card the kernel drives (AMD, NVIDIA, Intel) with a Vulkan
# driver installed other than Mesa's lavapipe, which runs on the CPU. SIMULACRA_GPU=0 never
# asks for it, SIMULACRA_GPU=1 always does.
set -euo pipefail
case "${SIMULACRA_GPU:-auto}" in
  0) exit 0 ;;
  1) echo vulkan; exit 0 ;;
esac
card=0
for v in /sys/class/drm/card*/device/vendor; do
  [ -r "$v" ] || continue
  case "$(cat "$v")" in 0x1002|0x10de|0x8086) card=1 ;; esac
done
driver=0
for d in /usr/share/vulkan/icd.d /etc/vulkan/icd.d; do
  for f in "$d"/*.json; do
    [ -e "$f" ] || continue
    case "$(basename "$f")" in lvp_icd*) ;; *) driver=1 ;; esac
  done
done
if [ "$card" = 1 ] && [ "$driver" = 1 ]; then echo vulkan; fi
