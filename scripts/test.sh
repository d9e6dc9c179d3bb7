#!/usr/bin/env bash
# Install what is needed into .venv (first time only), plus Debian's Chromium for the
# real-browser test, and run the whole test suite. Extra arguments go to pytest.
source "$(dirname "$0")/_venv.sh" requirements-test.txt
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser test ..."
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null
fi
exec .venv/bin/python -m pytest "$@"
