// What the browser scripts share: Debian's Chromium, headless, started by
// playwright-core (no browser download), and the report line the Go tests
// read. The Go side (browser_tools_test.go) passes PLAYWRIGHT_CORE, the
// path of tools/node_modules/playwright-core, and USER_DATA_DIR, a fresh
// profile.
"use strict";

const { chromium } = require(process.env.PLAYWRIGHT_CORE);

const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

// launch starts Chromium in the fresh profile; options are
// launchPersistentContext's, extraArgs more command-line flags.
exports.launch = (options = {}, extraArgs = []) =>
  chromium.launchPersistentContext(process.env.USER_DATA_DIR, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: [...ARGS, ...extraArgs],
    ...options,
  });

// report prints one check as a JSON line on stdout.
exports.report = (check, data) => console.log(JSON.stringify({ check, ...data }));
