#!/usr/bin/env bash
# Make Debian's Chromium available for the Playwright browser tests (Playwright cannot
# download its own browsers here). Needs root for apt-get; does nothing if Chromium exists.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "Chromium is missing and this user cannot install it: run 'sudo apt-get install -y chromium'." >&2
    exit 1
fi
echo "Installing Chromium for the browser tests..."
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
