#!/usr/bin/env bash
# `npm start`: make sure the system packages and npm modules are there, build both builds and the
# site, then serve build/site on http://127.0.0.1:8080/ (or PORT, or the next free port).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/ensure-deps.sh
bash scripts/build.sh
exec node scripts/serve.mjs build/site
