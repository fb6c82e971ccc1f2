#!/usr/bin/env bash
# Installs what the tests and the local runtime need: Debian packages when
# missing (as root), and the npm tools into tools/node_modules.
# Usage: install-deps.sh [runtime]
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages, each checked by a command or a file it provides.
APT_PACKAGES=()
need_command() { command -v "$1" >/dev/null 2>&1 || APT_PACKAGES+=("$2"); }
need_file() { [ -e "$1" ] || APT_PACKAGES+=("$2"); }
need_command ffmpeg ffmpeg       # the upstream simulator renders media; tests probe it
need_command ffprobe ffmpeg
need_command curl curl         # the README quickstart test runs its curl commands
need_command espeak-ng espeak-ng # local narration of long-form videos
need_file /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf fonts-dejavu-core   # drawtext's font, by path
# Burned captions' fonts (longform.CaptionFonts): Devanagari and Arabic
# from Noto, Japanese from WenQuanYi Micro Hei (Hebrew is DejaVu's).
need_file /usr/share/fonts/truetype/noto/NotoSansDevanagari-Regular.ttf fonts-noto-core
need_file /usr/share/fonts/truetype/wqy/wqy-microhei.ttc fonts-wqy-microhei
# The playground's and dashboard's browser tests drive Debian's Chromium with playwright-core
# (executablePath /usr/bin/chromium); make run does not need it.
[ "${1:-}" = runtime ] || need_file /usr/bin/chromium chromium

if [ ${#APT_PACKAGES[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian packages: ${APT_PACKAGES[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${APT_PACKAGES[@]}" >/dev/null; then
      echo "could not install the Debian packages: ${APT_PACKAGES[*]}" >&2
      echo "fix: apt-get update && apt-get install ${APT_PACKAGES[*]}   (chromium is in Debian main; the browser tests need /usr/bin/chromium)" >&2
      exit 1
    fi
  else
    echo "missing Debian packages: ${APT_PACKAGES[*]}" >&2
    echo "fix: sudo apt-get install ${APT_PACKAGES[*]}   (then run make test again)" >&2
    exit 1
  fi
fi

# `install-deps.sh runtime` stops here: make run needs no npm tools.
[ "${1:-}" = runtime ] && exit 0

# npm tools, pinned by tools/package-lock.json.
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is missing: the tests run npm tools (asl-validator, playwright-core, redocly, prism, openapi-typescript, @hey-api/openapi-ts, tsc)" >&2
  echo "fix: sudo apt-get install nodejs npm   (Node 18 or newer)" >&2
  exit 1
fi
stamp=tools/node_modules/.installed
if [ ! -f "$stamp" ] || [ tools/package-lock.json -nt "$stamp" ]; then
  echo "installing npm test tools into tools/node_modules"
  npm ci --prefix tools --no-audit --no-fund --loglevel=error
  touch "$stamp"
fi
