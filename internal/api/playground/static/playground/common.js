// What the playground and the dashboard share: DOM shortcuts, the API
// client (retries, the error envelope) and small renderers. A plain ES
// module, no build step.
export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// saved holds the pages' settings in localStorage (the playground's key,
// the API URL); the dashboard keeps its key elsewhere (sessionStorage).
export const saved = {
  get: (k) => localStorage.getItem("mediagen." + k) || "",
  set: (k, v) => (v ? localStorage.setItem("mediagen." + k, v) : localStorage.removeItem("mediagen." + k)),
};

// ---------------------------------------------------------------- the API

// ApiError is an answer that was not a success: the envelope's code,
// message and details, or the gateway's own {"message"} (a 401 without
// a key).
export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || (body && typeof body.message === "string" && body.message) || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || `http_${status}`;
    this.details = e.details || [];
  }
}

// apiRoot is the API's root: the configured URL, else this page's origin
// (the local runtime serves both).
export function apiRoot(configured) {
  const v = (configured || "").trim().replace(/\/+$/, "");
  if (v) return v;
  return location.protocol.startsWith("http") ? location.origin : "";
}

function randomKey() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// callApi sends one request to base + path, with the API key when key is
// given (only ever in the Authorization header); a 429 or 5xx is tried
// again (three times at most, after Retry-After when the answer names
// one), a POST with the same Idempotency-Key.
export async function callApi(method, path, body, { base = "", key } = {}) {
  const headers = { Accept: "application/json" };
  if (key !== undefined) headers.Authorization = "Bearer " + key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method === "POST") headers["Idempotency-Key"] = randomKey();
  for (let attempt = 0; ; attempt++) {
    let resp;
    try {
      resp = await fetch(apiRoot(base) + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (err) {
      if (attempt >= 3) throw new ApiError(0, { error: { code: "network", message: "the API did not answer: " + err.message } });
      await sleep(1000 * 2 ** attempt);
      continue;
    }
    const text = await resp.text();
    let data = null;
    try { data = JSON.parse(text); } catch { /* not JSON: a gateway's own error */ }
    if (resp.ok) return data;
    if ((resp.status === 429 || resp.status >= 500) && attempt < 3) {
      const after = parseInt(resp.headers.get("Retry-After") || "", 10);
      await sleep(after > 0 && after <= 30 ? after * 1000 : 1000 * 2 ** attempt);
      continue;
    }
    throw new ApiError(resp.status, data || { error: { message: text.slice(0, 200) || resp.statusText } });
  }
}

// ------------------------------------------------------------- rendering

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

// showError shows err's message (and its fields' messages) in box, or
// empties it.
export function showError(box, err) {
  box.replaceChildren();
  if (!err) return;
  box.append(el("strong", { text: err.message }));
  if (err.details && err.details.length) {
    box.append(el("ul", {}, ...err.details.map((d) => el("li", { text: `${d.field}: ${d.message}` }))));
  }
}

export function badge(status) {
  return el("span", { class: "badge " + status, "data-status": status, text: status });
}
