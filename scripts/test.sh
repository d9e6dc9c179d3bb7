#!/usr/bin/env bash
# Install what is needed into .venv (first time only), plus Debian's Chromium for the
# real-browser test, and run the whole test suite on two workers. Extra arguments go to pytest.
# The corpora, not the app's default tokenizer (a minute; the tests train their own, the app's first start makes it).
source "$(dirname "$0")/_venv.sh" requirements-test.txt --no-tokenizers
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser test ..."
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null
fi
# Two workers (pytest-xdist): most tests wait on subprocesses, servers and browsers part of
# the time. Tests of the one served app share a worker (conftest: xdist_group); `-n 0` runs
# everything in this process, ALBERT_LAB_TEST_WORKERS sets the count.
exec .venv/bin/python -m pytest -n "${ALBERT_LAB_TEST_WORKERS:-2}" --dist loadgroup "$@"
