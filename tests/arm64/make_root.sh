#!/usr/bin/env bash
# An arm64 (aarch64) Debian 12 root for `make test-arm64`, run under qemu-user on an x86-64 machine:
#   tests/arm64/make_root.sh ROOT
# debootstrap's first stage (--foreign) fetches Debian's arm64 python3 and its dependencies without running any of
# their scripts; `dpkg -x` unpacks each .deb into ROOT, which is all that `qemu-aarch64 -L ROOT` needs to start
# ROOT/usr/bin/python3.11. The notebooks' kernel packages (NumPy, matplotlib, pandas, ipykernel, ipywidgets,
# anywidget at the pins of requirements.txt) come from PyPI as aarch64 wheels (pip --platform), into
# ROOT/opt/kernel; grpo_core comes from src/ on the kernel's PYTHONPATH. Needs root and Debian's qemu-user and
# debootstrap (apt-get install qemu-user debootstrap). Takes about 3 minutes; ROOT is about 400 MB.
set -euo pipefail
root=$(realpath -m "${1:?usage: tests/arm64/make_root.sh ROOT}")
here=$(cd "$(dirname "$0")/../.." && pwd)
for tool in qemu-aarch64 debootstrap dpkg; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: apt-get install qemu-user debootstrap" >&2; exit 1; }
done
if [ ! -x "$root/usr/bin/python3.11" ]; then
  rm -rf "$root.tmp"
  debootstrap --foreign --arch=arm64 --variant=minbase --include=python3 bookworm "$root.tmp"
  for deb in "$root.tmp"/var/cache/apt/archives/*.deb; do dpkg -x "$deb" "$root.tmp"; done
  mv "$root.tmp" "$root"
fi
qemu-aarch64 -L "$root" "$root/usr/bin/python3.11" -c 'import platform; assert platform.machine() == "aarch64"'
rm -rf "$root/opt/kernel"
"$here/.venv/bin/python" -m pip install --quiet --no-compile --only-binary=:all: --python-version 3.11 \
  --implementation cp --platform manylinux_2_28_aarch64 --platform manylinux2014_aarch64 \
  --platform manylinux_2_17_aarch64 --target "$root/opt/kernel" -c "$here/requirements.txt" \
  numpy matplotlib pandas ipykernel ipywidgets anywidget
echo "arm64 root ready: $root"
