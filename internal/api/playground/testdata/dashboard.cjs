// Drives the dashboard in Debian's Chromium (headless) with playwright-core
// (chromium.cjs), as its user would: sign in with the admin dev key, read
// the balance, the usage chart and the transactions page by page, create a
// key with a daily limit and copy its secret, run a generation with that
// key through the API (as a script of the user's would), see the spend,
// revoke the key, and be signed out when a tab's key is revoked. Run by
// dashboard_test.go, which starts the local runtime and passes:
//   BASE_URL  the runtime's URL;  API_KEY  its dev account's key (admin)
//   OUT_DIR   where screenshots go
// Prints one JSON line per check to stdout (the Go test judges them, often
// against the API's own answers, also reported); exits 1 on the first step
// that cannot go on, after a screenshot of the page as it was.
"use strict";

const path = require("path");
const { launch, report } = require("./chromium.cjs");

const base = process.env.BASE_URL;
const adminKey = process.env.API_KEY;
const out = process.env.OUT_DIR;
// One step's hang detector (WAIT_MS, from browser_tools_test.go).
const WAIT = Number(process.env.WAIT_MS);
if (!(WAIT > 0)) throw new Error("WAIT_MS is not set: run this script through go test");
const SESSION_KEY = "mediagen.dashboard.apiKey";

// api is the user's own script: fetch with a key, the answer's status and
// body.
async function api(method, p, key, body) {
  const headers = { Accept: "application/json", Authorization: "Bearer " + key };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(base + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await resp.text();
  let data = null;
  try { data = JSON.parse(text); } catch { /* not JSON */ }
  return { status: resp.status, body: data };
}

async function apiOK(method, p, key, body) {
  const r = await api(method, p, key, body);
  if (r.status >= 300) throw new Error(`${method} ${p} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

// rowIDs are the data-id of the transactions table's rows.
const rowIDs = (page) => page.locator("#transactions tbody tr[data-id]").evaluateAll((rs) => rs.map((r) => r.dataset.id));

// storage is what the page keeps: where the key is (and is not).
async function storage(page, context, key) {
  const s = await page.evaluate(([k, sessionKey]) => ({
    session: sessionStorage.getItem(sessionKey) === k,
    local: Object.keys(localStorage).filter((n) => (localStorage.getItem(n) || "").includes(k)),
    documentCookie: document.cookie,
    html: document.documentElement.outerHTML.includes(k),
    input: document.querySelector("#sign-in-key").value,
  }), [key, SESSION_KEY]);
  return { ...s, cookies: (await context.cookies()).length, url: page.url(), urlHasKey: page.url().includes(key) };
}

async function refreshed(page) {
  await page.click("#refresh");
  await page.locator("#refresh:not([disabled])").waitFor({ timeout: WAIT });
}

async function main() {
  const context = await launch({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  const page = context.pages()[0] || (await context.newPage());
  const problems = [];
  const urls = []; // every URL the browser asked for
  const keyRoutes = []; // the keys API's answers, to name a missing API
  let step = "open";
  let allowed = []; // statuses the current step expects
  const watch = (p) => {
    p.on("pageerror", (err) => problems.push(`${step}: page error: ${err.message}`));
    p.on("console", (msg) => {
      if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource")) problems.push(`${step}: console error: ${msg.text()}`);
    });
    p.on("request", (r) => urls.push(r.url()));
    p.on("response", (r) => {
      const u = new URL(r.url());
      if (u.pathname.startsWith("/api/account/keys")) keyRoutes.push(`${r.request().method()} ${u.pathname}: ${r.status()}`);
      if (r.status() >= 400 && !allowed.includes(r.status())) problems.push(`${step}: HTTP ${r.status()} for ${r.request().method()} ${r.url()}`);
    });
  };
  watch(page);
  let tab2 = null;
  try {
    await page.goto(base + "/dashboard", { waitUntil: "load" });
    report("sign-in page", { signInShown: await page.isVisible("#sign-in"), boardShown: await page.isVisible("#board") });

    step = "bad key";
    allowed = [401];
    await page.fill("#sign-in-key", "mgk_aaaaaaaaaa_" + "A".repeat(43));
    await page.click("#sign-in-button");
    await page.locator("#sign-in-error strong").waitFor({ timeout: WAIT });
    report("bad key", { error: await page.textContent("#sign-in-error"), boardShown: await page.isVisible("#board") });
    allowed = [];

    step = "sign in";
    await page.fill("#sign-in-key", adminKey);
    await page.click("#sign-in-button");
    await page.locator("#board").waitFor({ state: "visible", timeout: WAIT });
    await page.locator("#transactions tbody tr[data-id]").first().waitFor({ timeout: WAIT });
    await page.locator("#usage-chart rect.bar").first().waitFor({ state: "attached", timeout: WAIT });
    await page.locator("#refresh:not([disabled])").waitFor({ timeout: WAIT }); // every panel loaded
    report("signed in", { signInShown: await page.isVisible("#sign-in"), ...(await storage(page, context, adminKey)) });

    step = "balance";
    const account = await apiOK("GET", "/api/account", adminKey);
    report("balance", { balance: await page.textContent("#balance"), held: await page.textContent("#held"),
      api: { balance: account.balance, held: account.held } });

    step = "usage chart";
    const usage = await apiOK("GET", "/api/account/usage?group_by=day", adminKey);
    report("usage chart", {
      bars: await page.locator("#usage-chart svg rect.bar").evaluateAll((bs) => bs.map((b) => ({ day: b.dataset.day, credits: b.dataset.credits }))),
      api: { from: usage.from, to: usage.to, days: usage.groups.length },
    });
    await page.screenshot({ path: path.join(out, "signed-in.png"), fullPage: true });

    step = "transactions paging";
    const apiPage1 = await apiOK("GET", "/api/account/transactions?limit=20", adminKey);
    const apiPage2 = await apiOK("GET", `/api/account/transactions?limit=20&cursor=${encodeURIComponent(apiPage1.next_cursor)}`, adminKey);
    const page1 = await rowIDs(page);
    const firstNewer = await page.isDisabled("#txn-newer");
    await page.click("#txn-older");
    await page.locator("#txn-page", { hasText: "page 2" }).waitFor({ timeout: WAIT });
    const page2 = await rowIDs(page);
    const lastOlder = await page.isDisabled("#txn-older");
    await page.click("#txn-newer");
    await page.locator("#txn-page", { hasText: "page 1" }).waitFor({ timeout: WAIT });
    report("transactions paging", { page1, page2, back: await rowIDs(page), newerDisabledOnFirst: firstNewer, olderDisabledOnLast: lastOlder,
      api: { page1: apiPage1.data.map((t) => t.id), page2: apiPage2.data.map((t) => t.id), hasMoreAfter2: apiPage2.has_more } });

    // The keys API (POST, GET, DELETE /api/account/keys) from here on.
    step = "create key";
    const keysError = await page.textContent("#keys-error");
    if (keysError) throw new Error(`the keys panel shows an error: ${keysError}`);
    await page.fill("#key-name", "ci-bot");
    await page.fill("#key-limit", "10.00");
    await page.click("#key-create");
    await page.locator("#key-secret").waitFor({ state: "visible", timeout: WAIT });
    const secret = (await page.textContent("#key-secret-value")).trim();
    await page.click("#key-copy");
    await page.locator("#key-copy-status", { hasText: "Copied" }).waitFor({ timeout: WAIT });
    const clipboard = await page.evaluate(() => navigator.clipboard.readText());
    const prefix = secret.slice(0, 14);
    const row = page.locator(`#keys tr[data-prefix="${prefix}"]`);
    await row.waitFor({ timeout: WAIT });
    report("create key", { secret, clipboard, prefix, copyButton: await page.isVisible("#key-copy"),
      row: await row.innerText(), active: await row.locator('[data-status="active"]').count() });
    await page.screenshot({ path: path.join(out, "key-created.png"), fullPage: true });

    step = "secret shown once";
    await page.click("#key-secret-done");
    const afterDone = await storage(page, context, secret);
    await page.reload({ waitUntil: "load" });
    await page.locator(`#keys tr[data-prefix="${prefix}"]`).waitFor({ timeout: WAIT });
    report("secret shown once", { afterDone, afterReload: await storage(page, context, secret),
      stillSignedIn: await page.isVisible("#board"), secretBoxShown: await page.isVisible("#key-secret") });

    step = "generation with the new key";
    const created = await apiOK("POST", "/api/generations/generate", secret,
      { model: "provider-a", model_version: "theta-4-fast", input: { prompt: "a lighthouse at dawn", aspect_ratio: "16:9" } });
    let view;
    for (;;) {
      view = await apiOK("GET", `/api/generations/status/${created.uuid}`, secret);
      if (view.status !== "processing") break;
      await new Promise((r) => setTimeout(r, 300));
    }
    report("generation", { uuid: created.uuid, status: view.status, credits_used: created.credits_used });

    step = "spend";
    await refreshed(page);
    await page.locator(`#keys tr[data-prefix="${prefix}"] td.spent`, { hasText: created.credits_used }).waitFor({ timeout: WAIT });
    const workRows = await page.locator(`#transactions tbody tr[data-work="${created.uuid}"]`).evaluateAll((rs) => rs.map((r) => ({
      type: r.dataset.type, cells: Array.from(r.cells, (c) => c.innerText.trim()) })));
    const after = await apiOK("GET", "/api/account", adminKey);
    report("spend", { balance: await page.textContent("#balance"), held: await page.textContent("#held"),
      keySpent: await page.textContent(`#keys tr[data-prefix="${prefix}"] td.spent`), workRows,
      api: { balance: after.balance, held: after.held } });
    await page.click('.segmented [data-group="key"]');
    await page.locator(`#usage-table tr[data-key="${prefix}"]`).waitFor({ timeout: WAIT });
    report("usage by key", { row: await page.locator(`#usage-table tr[data-key="${prefix}"]`).innerText() });
    await page.click('.segmented [data-group="day"]');
    await page.locator("#usage-chart svg").waitFor({ timeout: WAIT });
    const today = await page.locator("#usage-chart svg rect.bar").last().evaluate((b) => ({ day: b.dataset.day, credits: b.dataset.credits, height: b.getBBox().height }));
    report("usage chart after", { today });

    step = "revoke";
    page.once("dialog", (d) => d.accept());
    await page.locator(`#keys tr[data-prefix="${prefix}"] button.revoke`).click();
    await page.locator(`#keys tr[data-prefix="${prefix}"] [data-status="revoked"]`).waitFor({ timeout: WAIT });
    const refused = await api("GET", "/api/account", secret);
    report("revoke", { row: await page.locator(`#keys tr[data-prefix="${prefix}"]`).innerText(),
      revokeButtons: await page.locator(`#keys tr[data-prefix="${prefix}"] button.revoke`).count(), apiStatus: refused.status });
    await page.screenshot({ path: path.join(out, "dashboard.png") }); // the first screen: docs/dashboard.png

    // A second tab has a session of its own: signed out until it signs in,
    // here with a second admin key; when that key is revoked (from the
    // first tab), the second tab's next request signs it out.
    step = "second tab";
    await page.fill("#key-name", "laptop");
    await page.check('#key-form .scopes input[value="admin"]');
    await page.click("#key-create");
    await page.locator("#key-secret").waitFor({ state: "visible", timeout: WAIT });
    const second = (await page.textContent("#key-secret-value")).trim();
    await page.click("#key-secret-done");
    tab2 = await context.newPage();
    watch(tab2);
    await tab2.goto(base + "/dashboard", { waitUntil: "load" });
    const fresh = { signInShown: await tab2.isVisible("#sign-in"), boardShown: await tab2.isVisible("#board") };
    await tab2.fill("#sign-in-key", second);
    await tab2.click("#sign-in-button");
    await tab2.locator("#transactions tbody tr[data-id]").first().waitFor({ timeout: WAIT });
    const secondPrefix = second.slice(0, 14);
    page.once("dialog", (d) => d.accept());
    await page.locator(`#keys tr[data-prefix="${secondPrefix}"] button.revoke`).click();
    await page.locator(`#keys tr[data-prefix="${secondPrefix}"] [data-status="revoked"]`).waitFor({ timeout: WAIT });
    step = "signed out on 401";
    allowed = [401];
    await tab2.click("#refresh");
    await tab2.locator("#sign-in").waitFor({ state: "visible", timeout: WAIT });
    await tab2.locator("#sign-in-error strong").waitFor({ timeout: WAIT });
    report("second tab", { fresh, afterRevoke: { signInShown: await tab2.isVisible("#sign-in"), boardShown: await tab2.isVisible("#board"),
      error: await tab2.textContent("#sign-in-error"), keyKept: await tab2.evaluate((k) => sessionStorage.getItem(k), SESSION_KEY),
      balanceShown: await tab2.textContent("#balance") },
      firstTabSignedIn: await page.isVisible("#board") });
    await tab2.screenshot({ path: path.join(out, "signed-out.png") });
    allowed = [];

    step = "no key in a URL";
    report("urls", { count: urls.length, withKey: urls.filter((u) => [adminKey, secret, second].some((k) => u.includes(k))) });

    step = "page errors";
    if (problems.length) throw new Error(problems.join("; "));
  } catch (err) {
    await page.screenshot({ path: path.join(out, "failure.png"), fullPage: true }).catch(() => {});
    let msg = `step "${step}": ${err.message}`;
    if (keyRoutes.some((r) => r.endsWith(": 404"))) {
      msg += `\nthe keys API is missing from this build: ${keyRoutes.join(", ")} (POST, GET and DELETE /api/account/keys)`;
    }
    if (problems.length) msg += `\nalso: ${problems.join("; ")}`;
    console.error(msg);
    process.exitCode = 1;
  } finally {
    await context.close();
  }
}

main().catch((err) => { console.error(err); process.exitCode = 1; });
