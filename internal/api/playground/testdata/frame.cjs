// A page on another origin frames the playground and the dashboard, with a
// control frame of its own origin beside them, in Debian's Chromium
// (headless) with playwright-core (chromium.cjs). Run by frame_test.go,
// which passes FRAMER_URL, the page. Prints one JSON line per frame: its
// name, its URL and whether its page's content is there (a frame the
// browser refused shows an error page instead).
"use strict";

const { launch, report } = require("./chromium.cjs");

async function main() {
  const context = await launch();
  try {
    const page = context.pages()[0] || (await context.newPage());
    await page.goto(process.env.FRAMER_URL, { waitUntil: "load" });
    for (const name of ["playground", "dashboard", "control"]) {
      const handle = await page.$(`iframe[name="${name}"]`);
      const frame = handle && (await handle.contentFrame());
      let content = false;
      if (frame) {
        try {
          content = await frame.evaluate(() => !!document.querySelector("#api-key, #sign-in-key, #control"));
        } catch (err) {
          content = false;
        }
      }
      report("frame", { name, url: frame ? frame.url() : "", content });
    }
  } finally {
    await context.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
