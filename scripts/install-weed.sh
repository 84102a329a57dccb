#!/usr/bin/env bash
# Builds the SeaweedFS server binary the remote-image tests start on loopback.
# `go install ...@version` refuses modules with replace directives, so the
# module is downloaded and built as the main module. The result is cached and
# rebuilt only when missing.
set -euo pipefail
V="${WEED_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
OUT="${WEED_BIN:-$HOME/.cache/godwarfs/weed-$V/weed}"
if [ -x "$OUT" ]; then echo "$OUT"; exit 0; fi
mkdir -p "$(dirname "$OUT")"
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
D=$(go mod download -json "github.com/seaweedfs/seaweedfs@$V" |
  python3 -c 'import json,sys;print(json.load(sys.stdin)["Dir"])')
cp -r "$D" "$work/seaweedfs"
chmod -R u+w "$work/seaweedfs"
(cd "$work/seaweedfs" && go build -o "$OUT.tmp" ./weed)
mv "$OUT.tmp" "$OUT"
echo "$OUT"
