#!/usr/bin/env bash
# Build the VS Code extension into groundcode.vsix from pinned versions (package-lock.json):
# vscode-languageclient 11.0.0, @vscode/vsce 3.9.2 (Node.js >= 20). Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")"
command -v npm >/dev/null || { echo "error: npm is needed (Debian: apt install npm)" >&2; exit 2; }
npm ci --no-audit --no-fund --loglevel=error
npx --no-install vsce package --allow-missing-repository --skip-license -o groundcode.vsix
echo "built $(pwd)/groundcode.vsix"
