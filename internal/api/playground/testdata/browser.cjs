// Drives the playground in Debian's Chromium (headless) with playwright-core
// (chromium.cjs): an image, an image from an uploaded file, a video and a
// long-form video made through the page, the last with every studio option
// (a voice previewed, burned captions, portrait, crossfade, music from a
// file, narration speed) and a scene of its own model and narration, whose
// preview the form shows before the create. Run by browser_test.go, which starts the local runtime and passes:
//   BASE_URL         the runtime's URL;  API_KEY  its dev account's key
//   OUT_DIR          where screenshots go
// Prints one JSON line per check to stdout; exits 1 on the first failure,
// after a screenshot of the page as it was.
"use strict";

const path = require("path");
const { launch, report } = require("./chromium.cjs");

const base = process.env.BASE_URL;
const key = process.env.API_KEY;
const out = process.env.OUT_DIR;
// One step's hang detector (WAIT_MS, from browser_tools_test.go): a loaded
// machine takes minutes where a quiet one takes seconds.
const WAIT = Number(process.env.WAIT_MS);
if (!(WAIT > 0)) throw new Error("WAIT_MS is not set: run this script through go test");

// playing waits until a video element has data and its time advances.
async function playing(page, selector) {
  const v = page.locator(selector);
  await v.waitFor({ state: "attached", timeout: WAIT });
  await page.waitForFunction((sel) => {
    const e = document.querySelector(sel);
    return e && e.readyState >= 2 && e.duration > 0;
  }, selector, { timeout: WAIT });
  const first = await v.evaluate((e) => { e.play(); return e.currentTime; });
  await page.waitForFunction(([sel, t]) => document.querySelector(sel).currentTime > t + 0.2, [selector, first], { timeout: WAIT });
  return v.evaluate((e) => ({ readyState: e.readyState, currentTime: e.currentTime, duration: e.duration,
    videoWidth: e.videoWidth, videoHeight: e.videoHeight, paused: e.paused }));
}

// toneWAV is a mono 16-bit 8 kHz WAV of a sine tone.
function toneWAV(freq, seconds) {
  const rate = 8000, n = rate * seconds, buf = Buffer.alloc(44 + 2 * n);
  buf.write("RIFF", 0); buf.writeUInt32LE(36 + 2 * n, 4); buf.write("WAVEfmt ", 8);
  buf.writeUInt32LE(16, 16); buf.writeUInt16LE(1, 20); buf.writeUInt16LE(1, 22);
  buf.writeUInt32LE(rate, 24); buf.writeUInt32LE(2 * rate, 28); buf.writeUInt16LE(2, 32); buf.writeUInt16LE(16, 34);
  buf.write("data", 36); buf.writeUInt32LE(2 * n, 40);
  for (let i = 0; i < n; i++) buf.writeInt16LE(Math.round(8000 * Math.sin(2 * Math.PI * freq * i / rate)), 44 + 2 * i);
  return buf;
}

async function generate(page, variant, fields) {
  await page.selectOption("#variant", variant);
  for (const [name, value] of Object.entries(fields)) {
    const sel = `#input-${name}`;
    if ((await page.locator(sel).evaluate((e) => e.tagName)) === "SELECT") await page.selectOption(sel, value);
    else await page.fill(sel, value);
  }
  await page.click("#generate");
  await page.locator('#single-status [data-status="processing"]').waitFor({ timeout: WAIT });
  await page.locator('#single-status [data-status="completed"]').waitFor({ timeout: WAIT });
}

async function main() {
  const context = await launch({ viewport: { width: 1280, height: 860 } }, ["--autoplay-policy=no-user-gesture-required"]);
  const page = context.pages()[0] || (await context.newPage());
  const problems = [];
  page.on("pageerror", (err) => problems.push("page error: " + err.message));
  let step = "open";
  // Failed responses are checked here; the console's note about them is not
  // a script error. The bad-input step expects its one 400.
  page.on("console", (msg) => {
    if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource")) problems.push("console error: " + msg.text());
  });
  // How the page follows its jobs: their event streams, or status reads.
  const follows = { streams: 0, statusReads: 0 };
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.pathname.endsWith("/events")) follows.streams++;
    else if (r.method() === "GET" && /^\/api\/(generations\/status\/|long-story\/videos\/[^/]+$)/.test(u.pathname)) follows.statusReads++;
  });
  page.on("response", (r) => {
    if (r.status() >= 400 && !((step === "bad input" || step === "bad option") && r.status() === 400)) problems.push(`${step}: HTTP ${r.status()} for ${r.url()}`);
  });
  try {
    await page.goto(base + "/", { waitUntil: "load" });
    await page.fill("#api-key", key);
    await page.locator('#variant option[value="provider-a/theta-4-fast"]').waitFor({ state: "attached", timeout: WAIT });

    step = "image";
    await generate(page, "provider-a/theta-4-fast", { prompt: "a lighthouse at dawn", aspect_ratio: "16:9" });
    const img = page.locator("#single-output-0");
    await page.waitForFunction(() => {
      const i = document.querySelector("#single-output-0");
      return i && i.complete && i.naturalWidth > 0;
    }, null, { timeout: WAIT });
    const image = await img.evaluate((i) => ({ naturalWidth: i.naturalWidth, naturalHeight: i.naturalHeight, src: i.src }));
    report("image", image);
    await page.screenshot({ path: path.join(out, "image.png") });

    step = "upload";
    // A picked image is uploaded (POST /api/files, a PUT to its presigned
    // URL on the bucket's origin) and its file URL fills the field.
    await page.selectOption("#variant", "provider-a/zeta");
    await page.fill("#input-prompt", "the lighthouse again, at night");
    await page.setInputFiles("#input-image_input-file", { name: "lighthouse.png", mimeType: "image/png",
      buffer: Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64") });
    await page.waitForFunction(() => document.querySelector("#input-image_input").value.startsWith("mediagen://files/"), null, { timeout: WAIT });
    const field = await page.inputValue("#input-image_input");
    await page.click("#generate");
    await page.locator('#single-status [data-status="completed"]').waitFor({ timeout: WAIT });
    await page.locator("#single-output-0").waitFor({ timeout: WAIT });
    report("upload", { field, status: "completed", shown: await page.locator("#single-output-0").count() });

    step = "video";
    await generate(page, "provider-b/beta-2", { prompt: "waves at dusk", seconds: "4", aspect_ratio: "landscape" });
    report("video", { ...(await playing(page, "#single-output-0")), imageCountShown: await page.isVisible("#image-count") });
    await page.screenshot({ path: path.join(out, "video.png") });

    step = "bad input";
    await page.selectOption("#input-seconds", ""); // "(choose)": seconds is required
    await page.click("#generate");
    await page.locator("#single-error li").first().waitFor({ timeout: WAIT });
    report("bad input", { error: await page.textContent("#single-error"),
      marked: await page.locator(".field.invalid").evaluateAll((fs) => fs.map((f) => f.dataset.field)) });

    step = "key kept";
    await page.reload({ waitUntil: "load" });
    report("key kept", { kept: (await page.inputValue("#api-key")) === key });

    step = "long-form estimate";
    await page.click("#tab-story");
    await page.fill("#story-prompt", "A day at the seaside");
    const scenes = page.locator("#scenes .scene-prompt");
    await scenes.nth(0).fill("waves rolling onto the sand");
    await scenes.nth(1).fill("gulls over the pier");
    await page.click("#add-scene");
    await scenes.nth(2).fill("the sun setting over the sea");
    await page.locator("#story-estimate", { hasText: "3 scenes" }).waitFor({ timeout: WAIT });
    report("estimate", { text: await page.textContent("#story-estimate") });

    step = "scene model";
    // Scene 2 gets its own model (from the catalog's video models) and
    // narration: the estimate prices it by its model ("on average").
    const scene2 = page.locator("#scenes .scene").nth(1);
    const sceneModels = await scene2.locator(".scene-model option").evaluateAll((os) => os.map((o) => o.value));
    await scene2.locator(".scene-model").selectOption("delta-1-pro");
    await scene2.locator(".scene-narration").fill("The gulls call over the pier.");
    await page.locator("#story-estimate", { hasText: "on average" }).waitFor({ timeout: WAIT });
    report("scene model", { models: sceneModels, text: await page.textContent("#story-estimate") });

    step = "voices";
    await page.locator("#story-voice option:nth-child(2)").waitFor({ state: "attached", timeout: WAIT });
    const voices = await page.locator("#story-voice option").evaluateAll((os) => os.map((o) => ({ value: o.value, text: o.textContent, preview: o.dataset.preview || "" })));
    await page.selectOption("#story-voice", voices[voices.length - 1].value);
    await page.click("#story-voice-preview");
    await page.waitForFunction(() => {
      const a = document.querySelector("#story-voice-audio");
      return a && a.readyState >= 2 && a.duration > 0 && a.currentTime > 0;
    }, null, { timeout: WAIT });
    const audio = await page.locator("#story-voice-audio").evaluate((a) => ({ src: a.src, duration: a.duration }));
    report("voices", { voices, chosen: voices[voices.length - 1].value, preview: audio });

    step = "bad option";
    await page.fill("#story-speed", "2");
    await page.dispatchEvent("#story-speed", "change");
    await page.locator("#story-estimate", { hasText: "No estimate" }).waitFor({ timeout: WAIT });
    report("bad option", { text: await page.textContent("#story-estimate") });

    step = "studio options";
    await page.fill("#story-speed", "1.2");
    await page.dispatchEvent("#story-speed", "change");
    await page.selectOption("#story-captions", "burned");
    await page.selectOption("#story-aspect", "portrait");
    await page.selectOption("#story-transition", "crossfade");
    await page.setInputFiles("#story-music-file", { name: "loop.wav", mimeType: "audio/wav", buffer: toneWAV(110, 1) });
    await page.waitForFunction(() => document.querySelector("#story-music").value.startsWith("mediagen://files/"), null, { timeout: WAIT });
    await page.fill("#story-music-volume", "0.4");
    await page.dispatchEvent("#story-music-volume", "change");
    await page.locator("#story-estimate", { hasText: "3 scenes" }).waitFor({ timeout: WAIT });
    report("studio estimate", { text: await page.textContent("#story-estimate") });
    const preview = page.locator("#story-preview");
    report("preview", { text: await preview.textContent(),
      scenes: await preview.locator(".preview-scene").evaluateAll((ls) => ls.map((l) => l.textContent)) });
    await preview.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(out, "story-estimate.png") });
    // The scenes, the estimate and the preview, as docs/cli.md shows them.
    const clip = await page.evaluate(() => {
      const a = document.querySelector("#scenes").getBoundingClientRect(), b = document.querySelector("#story-preview").getBoundingClientRect();
      return { x: b.left - 32, y: a.top + window.scrollY - 8, width: b.width + 40, height: b.bottom - a.top + 16 };
    });
    await page.screenshot({ path: path.join(out, "story-preview.png"), fullPage: true, clip });

    step = "long-form video";
    await page.click("#story-create");
    await page.locator('#story-status [data-status="completed"]').waitFor({ timeout: WAIT });
    const storyStatus = await page.textContent("#story-status");
    report("story", { ...(await playing(page, "#story-video-0")), status: storyStatus, id: (/Video (\S+)/.exec(storyStatus) || [])[1],
      options: await page.textContent("#story-options"), captions: await page.getAttribute("#story-captions-link", "href") });
    await page.screenshot({ path: path.join(out, "story.png") });

    step = "re-render scene";
    await page.selectOption("#story-regen-scene", "2");
    await page.fill("#story-regen-prompt", "a red kite over the dunes");
    await page.click("#story-regen-go");
    await page.locator("#story-status", { hasText: "re-rendered" }).waitFor({ timeout: 2 * WAIT });
    report("story regen", { ...(await playing(page, "#story-video-0")), status: await page.textContent("#story-status"),
      src: await page.getAttribute("#story-video-0", "src") });
    report("follows", follows);
    await page.screenshot({ path: path.join(out, "story-regen.png") });

    step = "page errors";
    if (problems.length) throw new Error(problems.join("; "));
  } catch (err) {
    await page.screenshot({ path: path.join(out, "failure.png") }).catch(() => {});
    console.error(`step "${step}": ${err.message}`);
    process.exitCode = 1;
  } finally {
    await context.close();
  }
}

main().catch((err) => { console.error(err); process.exitCode = 1; });
