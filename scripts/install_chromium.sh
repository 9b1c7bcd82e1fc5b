#!/usr/bin/env bash
# Install headless Chromium from the distribution's packages, for the report's browser test
# (tests/report/test_report_in_chromium.py). Does nothing when /usr/bin/chromium is there.
set -euo pipefail
[ -x /usr/bin/chromium ] && exit 0
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
/usr/bin/chromium --version
