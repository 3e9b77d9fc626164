#!/usr/bin/env bash
# Node software the chain tests run against, installed from the npm registry into .tools/
# (ignored by git): ganache (a real EVM node). `--solc` adds solc, the Solidity compiler
# that built tests/payments/chains/data/TestToken.json (only needed to rebuild it:
# `node tests/payments/chains/data/compile_token.js`). Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
GANACHE_VERSION=7.9.2
SOLC_VERSION=0.8.26
if ! command -v npm >/dev/null; then
  echo "test-tools: npm is not installed; the ganache tests will skip" >&2
  exit 0
fi
mkdir -p .tools
if [ ! -x .tools/node_modules/.bin/ganache ] \
  || ! grep -q "\"version\": \"$GANACHE_VERSION\"" .tools/node_modules/ganache/package.json; then
  echo "== installing ganache $GANACHE_VERSION into .tools"
  npm install --prefix .tools --no-audit --no-fund --silent "ganache@$GANACHE_VERSION" >/dev/null
fi
if [ "${1:-}" = "--solc" ] && [ ! -d .tools/node_modules/solc ]; then
  echo "== installing solc $SOLC_VERSION into .tools"
  npm install --prefix .tools --no-audit --no-fund --silent "solc@$SOLC_VERSION" >/dev/null
fi
