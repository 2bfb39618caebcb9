#!/usr/bin/env bash
# System packages the test suite needs: headless Chromium + its driver (web-page tests) and espeak-ng
# (spoken test questions for the voice routes). Idempotent and quick when everything is present;
# it installs only when a command is missing (it runs as root on this machine kind and in CI).
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v espeak-ng >/dev/null 2>&1 || missing+=(espeak-ng)

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "system-deps: missing ${missing[*]}; run as root: apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "system-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
