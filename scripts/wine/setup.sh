#!/usr/bin/env bash
# Prepares the Wine prefix for the Windows test runs: creates it, and adds
# a bcryptprimitives.dll (ProcessPrng) where Wine lacks one, which Go
# binaries need to start. Needs x86_64-w64-mingw32-gcc (Debian's
# gcc-mingw-w64-x86-64-win32).
set -euo pipefail
cd "$(dirname "$0")"
export WINEDEBUG=-all
prefix=${WINEPREFIX:-$HOME/.wine}
wine=${WINE:-wine}
[ -d "$prefix/drive_c/windows/system32" ] || "$wine" cmd /c exit >/dev/null 2>&1 || true
sys="$prefix/drive_c/windows/system32"
[ -d "$sys" ] || { echo "no Wine prefix at $prefix" >&2; exit 1; }
if [ ! -e "$sys/bcryptprimitives.dll" ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  x86_64-w64-mingw32-gcc -O2 -shared -o "$out/bcryptprimitives.dll" bcryptprimitives.c bcryptprimitives.def -ladvapi32
  cp "$out/bcryptprimitives.dll" "$sys/"
fi
