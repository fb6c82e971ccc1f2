// mediagen dashboard: the account holder's balance, usage, credit journal
// and API keys, read with an admin key kept in this tab's sessionStorage
// only. Plain browser JavaScript (an ES module, strict), no build step.
import { $, $$, saved, callApi, el, showError, badge } from "./common.js";

const KEY = "mediagen.dashboard.apiKey"; // sessionStorage: this tab only
const PAGE_SIZE = 20;
const SVG = "http://www.w3.org/2000/svg";

// ---------------------------------------------------------------- session

const session = {
  key: () => sessionStorage.getItem(KEY) || "",
  start: (key) => sessionStorage.setItem(KEY, key),
  end: () => sessionStorage.removeItem(KEY),
};

// api sends one request with the session's key. A 401 means the key is no
// longer accepted (revoked, or never valid): the session ends and the
// sign-in form says why.
async function api(method, path, body) {
  try {
    return await callApi(method, path, body, { base: saved.get("baseUrl"), key: session.key() });
  } catch (err) {
    if (err.status === 401) signOut(`Signed out: the API refused the key (${err.message}).`);
    throw err;
  }
}

// panel runs load, showing its error in box; a 401 has already signed out.
async function panel(box, load) {
  try {
    await load();
    showError(box, null);
  } catch (err) {
    if (err.status !== 401) showError(box, err);
  }
}

// ------------------------------------------------------------ formatting

// Amounts are the API's decimal strings, shown as they are with thousands
// separators: never through a float.
function credits(s) {
  if (s === null || s === undefined) return "–";
  const m = /^([+-]?)(\d+)(\.\d+)?$/.exec(String(s));
  if (!m) return String(s);
  return m[1] + m[2].replace(/\B(?=(\d{3})+(?!\d))/g, ",") + (m[3] || "");
}

// signed shows a change with its sign: "+2.50", "-2.50", "0.00".
function signed(s) {
  const v = String(s);
  return /^-/.test(v) || isZero(v) ? credits(v) : "+" + credits(v);
}

function isZero(s) {
  return /^[+-]?0(\.0+)?$/.test(String(s));
}

function when(iso) {
  if (!iso) return "–";
  return iso.replace("T", " ").replace(/(\.\d+)?Z$/, "");
}

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

// ---------------------------------------------------------------- account

async function loadAccount() {
  const a = await api("GET", "/api/account");
  $("#balance").textContent = credits(a.balance);
  $("#held").textContent = credits(a.held);
  $("#month-credits").textContent = credits(a.usage.credits);
  $("#month-jobs").textContent = `credits in ${a.usage.month}, ${plural(a.usage.jobs, "job", "jobs")}`;
  $("#plan").textContent = a.plan;
  $("#rate-limit").textContent = `${a.rate_limit.requests_per_minute} requests per minute`;
  $("#who").textContent = `${a.user_id} · key ${session.key().slice(0, 14)}`;
  return a;
}

// ------------------------------------------------------------------ usage

let usageGroup = "day";
let usageAsked = 0; // the latest request: an older answer arriving late is dropped

async function loadUsage() {
  const asked = ++usageAsked;
  const u = await api("GET", `/api/account/usage?group_by=${usageGroup}`);
  if (asked !== usageAsked) return;
  $("#usage-total").textContent = `${u.from} to ${u.to}: ${credits(u.total.credits)} credits · ` +
    `${plural(u.total.generations, "generation", "generations")} · ${plural(u.total.videos, "long video", "long videos")}`;
  const chart = $("#usage-chart"), table = $("#usage-table");
  chart.hidden = usageGroup !== "day";
  table.hidden = usageGroup === "day";
  if (usageGroup === "day") {
    drawChart(chart, u.groups);
    return;
  }
  $("#usage-key-head").textContent = usageGroup === "model" ? "Model" : "Key";
  const body = $("tbody", table);
  body.replaceChildren(...u.groups.map((g) => el("tr", { "data-key": g.key },
    el("td", {}, el("code", { text: g.key })), el("td", { class: "num", text: credits(g.credits) }),
    el("td", { class: "num", text: String(g.generations) }), el("td", { class: "num", text: String(g.videos) }))));
  if (!u.groups.length) body.append(el("tr", {}, el("td", { colspan: 4, class: "empty", text: "Nothing captured in these days." })));
}

function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

// niceCeiling is the smallest 1, 2 or 5 × 10^n at least v, the top of the
// axis.
function niceCeiling(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * p).find((c) => c >= v);
}

// drawChart draws one bar per day (the API lists every day of the range,
// zeros included). The heights use parseFloat; the labels show the API's
// strings.
function drawChart(box, days) {
  const W = 900, H = 150, left = 52, right = 8, top = 12, bottom = 28;
  const plotW = W - left - right, plotH = H - top - bottom;
  const max = niceCeiling(Math.max(0, ...days.map((d) => parseFloat(d.credits))));
  const y = (v) => top + plotH - (v / max) * plotH;
  const step = plotW / Math.max(days.length, 1), barW = Math.max(step * 0.7, 1);
  const g = svg("g");
  for (const t of [0, max / 2, max]) {
    g.append(svg("line", { x1: left, x2: W - right, y1: y(t), y2: y(t), class: "grid" }),
      svg("text", { x: left - 6, y: y(t) + 4, "text-anchor": "end", class: "tick" }, document.createTextNode(String(+t.toFixed(2)))));
  }
  days.forEach((d, i) => {
    const v = parseFloat(d.credits), x = left + i * step + (step - barW) / 2;
    const h = Math.max(y(0) - y(v), 0);
    const bar = svg("rect", { x, y: y(0) - h, width: barW, height: h, class: "bar", "data-day": d.key, "data-credits": d.credits },
      svg("title", {}, document.createTextNode(`${d.key}: ${d.credits} credits, ${plural(d.generations, "generation", "generations")}, ${plural(d.videos, "long video", "long videos")}`)));
    g.append(bar);
    const last = days.length - 1; // the first and last days, and every 7th not too near the last
    if (i === 0 || i === last || (i % 7 === 0 && last - i >= 4)) {
      g.append(svg("text", { x: left + i * step + step / 2, y: H - 8, "text-anchor": "middle", class: "tick" }, document.createTextNode(d.key.slice(5))));
    }
  });
  const total = days.reduce((s, d) => s + parseFloat(d.credits), 0);
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `Credits captured per day, ${days.length ? days[0].key : ""} to ${days.length ? days[days.length - 1].key : ""}` }, g);
  box.replaceChildren(chart);
  if (total === 0) box.append(el("p", { class: "note empty", text: "No credits spent in these days." }));
}

// ----------------------------------------------------------- transactions

// The pages seen so far: cursors[i] reads page i (null: the newest).
const txn = { cursors: [null], page: 0 };

async function loadTransactions() {
  const cursor = txn.cursors[txn.page];
  const q = `limit=${PAGE_SIZE}` + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : "");
  const list = await api("GET", `/api/account/transactions?${q}`);
  txn.cursors.length = txn.page + 1;
  if (list.has_more && list.next_cursor) txn.cursors.push(list.next_cursor);
  $("#txn-newer").disabled = txn.page === 0;
  $("#txn-older").disabled = txn.cursors.length <= txn.page + 1;
  $("#txn-page").textContent = `page ${txn.page + 1}`;
  const body = $("#transactions tbody");
  body.replaceChildren(...list.data.map(transactionRow));
  if (!list.data.length) body.append(el("tr", {}, el("td", { colspan: 9, class: "empty", text: "No transactions." })));
}

function transactionRow(t) {
  const change = (s) => el("td", { class: "num " + (isZero(s) ? "" : /^-/.test(s) ? "minus" : "plus"), text: signed(s) });
  const work = t.work_id ? el("span", { title: t.work_id, text: `${t.work_type || "work"} ${t.work_id.slice(0, 8)}` })
    : t.grant_id ? el("span", { title: t.grant_id, text: t.grant_id.length > 16 ? t.grant_id.slice(0, 14) + "…" : t.grant_id }) : "–";
  return el("tr", { "data-id": t.id, "data-type": t.type, "data-work": t.work_id },
    el("td", { class: "when", title: t.created_at, text: when(t.created_at) }),
    el("td", {}, badge(t.type)),
    change(t.balance_change), change(t.held_change),
    el("td", { class: "num", text: credits(t.balance_after) }), el("td", { class: "num", text: credits(t.held_after) }),
    el("td", {}, work), el("td", { text: t.model || "–" }),
    el("td", {}, t.key_prefix ? el("code", { text: t.key_prefix }) : "–"));
}

function turnPage(delta) {
  $("#txn-newer").disabled = $("#txn-older").disabled = true; // until this page is read
  txn.page = Math.max(0, Math.min(txn.page + delta, txn.cursors.length - 1));
  return panel($("#txn-error"), loadTransactions);
}

// ------------------------------------------------------------------- keys

async function loadKeys() {
  // The list comes in pages (at most 100 keys each): read them all.
  const keys = [];
  let cursor = "";
  do {
    const page = await api("GET", "/api/account/keys?limit=100" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
    keys.push(...page.data);
    cursor = page.has_more ? page.next_cursor : "";
  } while (cursor);
  const mine = session.key().slice(0, 14);
  $("#keys tbody").replaceChildren(...keys.map((k) => keyRow(k, k.prefix === mine)));
}

function keyRow(k, current) {
  const limit = k.daily_credit_limit;
  const spent = el("td", { class: "num spent" }, `${credits(k.spent_today)} / ${limit === null ? "no limit" : credits(limit)}`);
  if (limit !== null && parseFloat(limit) > 0) {
    const share = Math.min(parseFloat(k.spent_today) / parseFloat(limit), 1);
    spent.append(el("meter", { min: 0, max: 1, value: share.toFixed(3), title: `${Math.round(share * 100)} % of the daily limit` }));
  }
  let status;
  if (k.revoked_at) {
    status = el("td", {}, badge("revoked"), el("small", { class: "note when", text: " " + when(k.revoked_at) }));
  } else {
    const revoke = el("button", { type: "button", class: "secondary revoke", text: "Revoke" });
    revoke.addEventListener("click", () => revokeKey(k.prefix, current));
    status = el("td", {}, badge("active"), " ", revoke);
  }
  return el("tr", { "data-prefix": k.prefix, class: k.revoked_at ? "revoked" : "" },
    el("td", {}, el("code", { text: k.prefix }), current ? el("small", { class: "note", text: " (this session)" }) : null),
    el("td", { text: k.name }), el("td", { text: (k.scopes || []).join(", ") }), spent,
    el("td", { class: "when", title: k.created_at, text: when(k.created_at) }), el("td", { class: "when", title: k.last_used_at || "", text: when(k.last_used_at) }), status);
}

async function createKey(ev) {
  ev.preventDefault();
  const body = { name: $("#key-name").value.trim(), scopes: $$("#key-form .scopes input:checked").map((c) => c.value) };
  const limit = $("#key-limit").value.trim();
  if (limit) body.daily_credit_limit = limit;
  const btn = $("#key-create");
  btn.disabled = true;
  try {
    const created = await api("POST", "/api/account/keys", body);
    showSecret(created.api_key);
    $("#key-form").reset();
    showError($("#keys-error"), null);
    await panel($("#keys-error"), loadKeys);
  } catch (err) {
    if (err.status !== 401) showError($("#keys-error"), err);
  } finally {
    btn.disabled = false;
  }
}

// showSecret shows a new key until Done: it is kept nowhere else.
function showSecret(secret) {
  $("#key-secret-value").textContent = secret;
  $("#key-copy-status").textContent = "";
  $("#key-secret").hidden = !secret;
}

async function copySecret() {
  const secret = $("#key-secret-value").textContent, status = $("#key-copy-status");
  try {
    await navigator.clipboard.writeText(secret);
    status.textContent = "Copied to the clipboard.";
  } catch {
    // No clipboard access (an insecure origin, or refused): select the
    // key so that the user can copy it.
    getSelection().selectAllChildren($("#key-secret-value"));
    status.textContent = "Press Ctrl-C (⌘-C) to copy the selected key.";
  }
}

async function revokeKey(prefix, current) {
  const warning = current ? " This is the key this page is signed in with: you will be signed out." : "";
  if (!confirm(`Revoke ${prefix}? Requests with it will be refused from now on.${warning}`)) return;
  await panel($("#keys-error"), async () => {
    await api("DELETE", `/api/account/keys/${encodeURIComponent(prefix)}`);
    await loadKeys();
  });
}

// ---------------------------------------------------------------- sign-in

function showBoard(on) {
  $("#sign-in").hidden = on;
  $("#board").hidden = !on;
  $("#session").hidden = !on;
}

// signOut forgets the key and everything the page showed with it.
function signOut(message) {
  session.end();
  showSecret("");
  showBoard(false);
  for (const e of $$("#board tbody, #usage-chart")) e.replaceChildren();
  for (const e of $$("#board .card strong, #month-jobs, #rate-limit, #who, #usage-total")) e.textContent = "";
  showError($("#sign-in-error"), message ? { message } : null);
  $("#sign-in-key").focus();
}

async function refresh() {
  const btn = $("#refresh");
  btn.disabled = true;
  txn.cursors = [null];
  txn.page = 0;
  await Promise.all([
    panel($("#account-error"), loadAccount),
    panel($("#usage-error"), loadUsage),
    panel($("#txn-error"), loadTransactions),
    panel($("#keys-error"), loadKeys),
  ]);
  btn.disabled = false;
}

async function signIn(ev) {
  ev.preventDefault();
  const input = $("#sign-in-key"), key = input.value.trim();
  saved.set("baseUrl", $("#base-url").value.trim());
  if (!key) {
    showError($("#sign-in-error"), { message: "Paste an API key with the admin scope." });
    return;
  }
  const btn = $("#sign-in-button");
  btn.disabled = true;
  try {
    await callApi("GET", "/api/account", undefined, { base: saved.get("baseUrl"), key });
  } catch (err) {
    showError($("#sign-in-error"), err.status === 401 ? { message: `The API refused this key: ${err.message}` } : err);
    return;
  } finally {
    btn.disabled = false;
  }
  input.value = ""; // the page keeps the key in sessionStorage only
  session.start(key);
  showError($("#sign-in-error"), null);
  showBoard(true);
  await refresh();
}

function selectGroup(group) {
  usageGroup = group;
  for (const b of $$(".segmented button")) b.setAttribute("aria-pressed", String(b.dataset.group === group));
  return panel($("#usage-error"), loadUsage);
}

function start() {
  const base = $("#base-url");
  base.value = saved.get("baseUrl");
  base.placeholder = location.protocol.startsWith("http") ? `${location.origin} (this site)` : "https://…";
  $("#sign-in").addEventListener("submit", signIn);
  $("#sign-out").addEventListener("click", () => signOut(""));
  $("#refresh").addEventListener("click", refresh);
  $("#txn-older").addEventListener("click", () => turnPage(1));
  $("#txn-newer").addEventListener("click", () => turnPage(-1));
  for (const b of $$(".segmented button")) b.addEventListener("click", () => selectGroup(b.dataset.group));
  $("#key-form").addEventListener("submit", createKey);
  $("#key-copy").addEventListener("click", copySecret);
  $("#key-secret-done").addEventListener("click", () => showSecret(""));
  if (session.key()) {
    showBoard(true);
    refresh();
  } else {
    showBoard(false);
  }
}

start();
