// The chain a security probe once ran, tried again in Debian's Chromium
// (headless) with playwright-core (chromium.cjs): the playground keeps its
// API key in localStorage; a page on another origin tries to write an HTML
// file into the output store and to open files from it, hoping to run
// script on the playground's origin. Run by chain_test.go, which passes:
//   BASE_URL         the runtime's URL (API and playground);  API_KEY  a key
//   ATTACK_URL       the attacker's page, on another origin
//   PLANTED          space-separated URLs of HTML files the test put in the
//                    store itself (the worst case: one got there)
//   CONTROL_URL      the same HTML as a page of the attacker's origin: its
//                    script must run, or the test proves nothing
// Prints one JSON line per check to stdout; exits 1 when the run breaks.
"use strict";

const { launch, report } = require("./chromium.cjs");

const base = process.env.BASE_URL;
const key = process.env.API_KEY;
// One step's hang detector (WAIT_MS, from browser_tools_test.go).
const WAIT = Number(process.env.WAIT_MS);
if (!(WAIT > 0)) throw new Error("WAIT_MS is not set: run this script through go test");

async function main() {
  const context = await launch({ acceptDownloads: false });
  try {
    // The user pastes a key into the playground: it is kept in localStorage.
    const playground = context.pages()[0] || (await context.newPage());
    await playground.goto(base + "/", { waitUntil: "load" });
    await playground.fill("#api-key", key);
    report("key stored", { stored: (await playground.evaluate(() => localStorage.getItem("mediagen.apiKey"))) === key });

    // The user then visits the attacker's page, which tries every write.
    const attacker = await context.newPage();
    await attacker.goto(process.env.ATTACK_URL, { waitUntil: "load" });
    await attacker.waitForFunction(() => window.attempts && window.attempts.done, null, { timeout: WAIT });
    report("attempts", { origin: await attacker.evaluate(() => location.origin),
      results: await attacker.evaluate(() => window.attempts.results) });

    // Files that are in the store, opened as a page would open them, each
    // in the attacker's frame and in a tab of its own.
    for (const url of (process.env.PLANTED || "").split(" ").filter(Boolean)) {
      const tab = await context.newPage();
      let opened = "rendered";
      try {
        await tab.goto(url, { waitUntil: "load", timeout: WAIT });
      } catch (err) {
        opened = "not rendered: " + err.message.split("\n")[0];
      }
      await attacker.evaluate((u) => {
        const f = document.createElement("iframe");
        f.src = u;
        document.body.appendChild(f);
      }, url);
      await tab.waitForTimeout(1000);
      let origin = "";
      try { origin = await tab.evaluate(() => location.origin); } catch (err) { origin = "none"; }
      report("planted", { url, opened, origin });
      await tab.close();
    }

    // The control: the same payload as a page of the attacker's own.
    const control = await context.newPage();
    await control.goto(process.env.CONTROL_URL, { waitUntil: "load" });
    await control.waitForFunction(() => document.title === "ran", null, { timeout: WAIT });
    report("control", { ran: true });
    await control.close();

    // The key is where the user left it.
    await playground.reload({ waitUntil: "load" });
    report("key kept", { kept: (await playground.inputValue("#api-key")) === key });
  } finally {
    await context.close();
  }
}

main().catch((err) => { console.error(err); process.exitCode = 1; });
