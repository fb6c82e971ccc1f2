// mediagen playground: builds a form from each variant's input schema
// (GET /api/models), submits it, follows the status (its event stream, or
// by polling where there is none) and shows the result.
// Plain browser JavaScript (an ES module, strict), no build step.
import { $, $$, sleep, saved, apiRoot, callApi, el, showError, badge } from "./common.js";

// api sends one request with the page's API URL and, unless auth is false,
// its key.
function api(method, path, body, { auth = true } = {}) {
  return callApi(method, path, body, { base: $("#base-url").value, key: auth ? $("#api-key").value.trim() : undefined });
}

// isFinal is a view no longer processing.
const isFinal = (view) => view.status !== "processing";

// poll reads a status until final says the view is the last, calling render with each
// view; it stops early when job.stopped is set (a newer submission).
async function poll(path, render, job, final = isFinal) {
  let interval = 700;
  for (;;) {
    const view = await api("GET", path);
    if (job.stopped) return null;
    render(view);
    if (final(view)) return view;
    await sleep(interval);
    interval = Math.min(interval * 1.5, 5000);
  }
}

// follow reads a job's event stream (GET …/events, text/event-stream)
// until a final view, calling render with each; EventSource cannot send
// the Authorization header, so the stream is read with fetch and the
// body's ReadableStream. Where the service has no stream (a 404 without
// the envelope, a 429, no event stream in the answer) or it breaks or
// ends with an error event, it polls statusPath instead. It stops early
// when job.stopped is set; final says which view is the last.
async function follow(streamPath, statusPath, render, job, final = isFinal) {
  let resp;
  try {
    resp = await fetch(apiRoot($("#base-url").value) + streamPath, {
      headers: { Accept: "text/event-stream", Authorization: "Bearer " + $("#api-key").value.trim() },
    });
  } catch {
    return poll(statusPath, render, job, final);
  }
  const type = resp.headers.get("Content-Type") || "";
  if (!resp.ok || !type.startsWith("text/event-stream") || !resp.body) {
    resp.body?.cancel();
    return poll(statusPath, render, job, final);
  }
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (job.stopped) {
        reader.cancel();
        return null;
      }
      if (done) break;
      buf += value;
      let end;
      while ((end = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const lines = block.split("\n");
        if (lines.includes("event: error")) {
          // The stream's credential no longer holds (a key revoked while
          // it streamed): the status route answers why.
          reader.cancel();
          return poll(statusPath, render, job, final);
        }
        const data = lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
        if (!data) continue; // a comment (keep-alive) or the retry line
        const view = JSON.parse(data);
        render(view);
        if (final(view)) {
          reader.cancel();
          return view;
        }
      }
    }
  } catch {
    // A broken stream: the status route says where the job is.
  }
  return poll(statusPath, render, job, final);
}

// ------------------------------------------------------------- rendering

function statusLine(box, parts) {
  box.replaceChildren(...parts.filter(Boolean).flatMap((p, i) => (i ? [" · ", p] : [p])));
}

function elapsed(start) {
  return ((Date.now() - start) / 1000).toFixed(1) + " s";
}

function priceText(price) {
  const parts = [`${price.credits_per_unit} credits per ${price.unit}`];
  for (const c of price.cases || []) {
    const when = Object.keys(c.when).sort().map((k) => `${k}=${c.when[k]}`).join(", ");
    parts.push(`${c.credits_per_unit} if ${when}`);
  }
  if (price.credits_at_defaults) parts.push(`${price.credits_at_defaults} at defaults`);
  return parts.join(" · ");
}

// ------------------------------------------------- the single generation tab

let models = [];
let singleJob = { stopped: true };

function isImageRef(prop) {
  return prop.type === "string" && typeof prop.pattern === "string" && prop.pattern.includes("://");
}

// upload sends a picked file (an image, or the music) to the service's
// bucket: POST /api/files makes the file, a PUT to its presigned
// upload_url (no key: the URL is the permission) stores the bytes; the
// answer is the file's URL, mediagen://files/<file_id>, which any image
// field (an image) or music_url (audio) takes. contentType overrides the
// browser's name for the file's type.
async function upload(file, contentType = file.type) {
  const f = await api("POST", "/api/files", { content_type: contentType, size: file.size });
  const r = await fetch(f.upload_url, { method: "PUT", body: file, headers: { "Content-Type": f.content_type } });
  if (!r.ok) throw new Error(`The upload of ${file.name} was refused: HTTP ${r.status}`);
  return f.url;
}

// fieldControl is the input of one schema property.
function fieldControl(name, prop, required) {
  const id = "input-" + name;
  if (prop.enum) {
    const opts = prop.enum.filter((v) => typeof v === "string");
    const s = el("select", { id, name, required });
    if (!required || prop.default === undefined) {
      s.append(el("option", { value: "", text: prop.default !== undefined ? `(default: ${prop.default})` : required ? "(choose)" : "(not set)" }));
    }
    for (const v of opts) s.append(el("option", { value: v, text: v }));
    return s;
  }
  if (prop.type === "boolean") {
    const s = el("select", { id, name, "data-type": "boolean" });
    s.append(el("option", { value: "", text: prop.default !== undefined ? `(default: ${prop.default})` : "(not set)" }));
    s.append(el("option", { value: "true", text: "true" }), el("option", { value: "false", text: "false" }));
    return s;
  }
  if (prop.type === "array" || isImageRef(prop)) {
    const list = prop.type === "array";
    const text = list
      ? el("textarea", { id, name, rows: 2, "data-type": "list", placeholder: "one https URL, data: URI or mediagen://files/… per line" })
      : el("input", { id, name, type: "text", required, placeholder: "https://…, data:image/… or mediagen://files/…" });
    // A picked file is uploaded (up to 100 MiB), and its file URL fills
    // the field.
    const file = el("input", { id: id + "-file", type: "file", accept: "image/png,image/jpeg,image/webp,image/gif", multiple: list, "aria-label": name + " file" });
    file.addEventListener("change", async () => {
      const errBox = $("#single-error");
      showError(errBox, null);
      file.disabled = true;
      try {
        const urls = await Promise.all(Array.from(file.files).map((f) => upload(f)));
        text.value = list ? [text.value.trim(), ...urls].filter(Boolean).join("\n") : urls[0] || "";
        text.dispatchEvent(new Event("input"));
      } catch (err) {
        showError(errBox, err);
      } finally {
        file.disabled = false;
      }
    });
    return el("div", { class: "image-input" }, text, file);
  }
  const attrs = { id, name, required, minlength: prop.minLength, maxlength: prop.maxLength };
  return name === "prompt" ? el("textarea", { ...attrs, rows: 3 }) : el("input", { ...attrs, type: "text" });
}

function buildForm(model) {
  const schema = model.input_schema;
  const order = schema["x-field-order"] || Object.keys(schema.properties);
  const required = schema.required || [];
  const box = $("#fields");
  box.replaceChildren();
  for (const name of order) {
    const prop = schema.properties[name];
    if (!prop) continue;
    const isReq = required.includes(name);
    const hint = [prop.description, prop.maxLength ? `at most ${prop.maxLength} characters` : ""].filter(Boolean).join(" ");
    box.append(el("label", { class: "field", "data-field": name },
      el("span", { text: name + (isReq ? " *" : "") }), fieldControl(name, prop, isReq), el("span", { class: "hint", text: hint })));
  }
  const images = model.kind === "image" && !schema.properties.num_images;
  $("#image-count-label").hidden = !images;
  $("#variant-price").textContent = priceText(model.price);
}

function collectInput(model) {
  const input = {};
  for (const name of Object.keys(model.input_schema.properties)) {
    const c = $("#input-" + CSS.escape(name));
    if (!c || c.value.trim() === "") continue;
    if (c.dataset.type === "boolean") input[name] = c.value === "true";
    else if (c.dataset.type === "list") input[name] = c.value.split("\n").map((s) => s.trim()).filter(Boolean);
    else input[name] = c.value;
  }
  return input;
}

function markInvalid(err) {
  $$(".field.invalid").forEach((f) => f.classList.remove("invalid"));
  for (const d of (err && err.details) || []) {
    const name = d.field.replace(/^input\./, "").replace(/\[\d+\]$/, "");
    const f = $(`.field[data-field="${CSS.escape(name)}"]`);
    if (f) f.classList.add("invalid");
  }
}

function renderOutputs(box, urls, kind, idPrefix) {
  box.replaceChildren(...urls.map((u, i) => {
    const media = kind === "video"
      ? el("video", { id: `${idPrefix}-${i}`, src: u, controls: true, autoplay: true, muted: true, loop: true, playsinline: true })
      : el("img", { id: `${idPrefix}-${i}`, src: u, alt: `output ${i + 1}` });
    if (kind === "video") media.muted = true; // the attribute alone does not mute a created element
    return el("figure", {}, media, el("a", { href: u, target: "_blank", rel: "noopener", text: "open" }));
  }));
}

async function submitSingle(ev) {
  ev.preventDefault();
  const model = models.find((m) => `${m.model}/${m.version}` === $("#variant").value);
  if (!model) return;
  singleJob.stopped = true;
  const job = { stopped: false };
  singleJob = job;
  const status = $("#single-status"), errBox = $("#single-error"), out = $("#single-output");
  showError(errBox, null);
  markInvalid(null);
  out.replaceChildren();
  const body = { model: model.model, model_version: model.version, input: collectInput(model) };
  if (!$("#image-count-label").hidden) body.image_count = parseInt($("#image-count").value, 10) || 1;
  const btn = $("#generate");
  btn.disabled = true;
  const start = Date.now();
  try {
    const rec = await api("POST", "/api/generations/generate", body);
    statusLine(status, [`Generation ${rec.uuid}`, badge(rec.status), `${rec.credits_used} credits held`]);
    const id = encodeURIComponent(rec.uuid);
    const final = await follow(`/api/generations/${id}/events`, `/api/generations/status/${id}`, (v) => {
      const pct = typeof v.progress === "number" ? `${Math.round(v.progress)} %` : null;
      statusLine(status, [`Generation ${rec.uuid}`, badge(v.status), pct, elapsed(start), `${rec.credits_used} credits`]);
    }, job);
    if (!final) return;
    if (final.status === "completed") renderOutputs(out, final.output, model.kind, "single-output");
    else showError(errBox, { message: `${final.status}: ${final.error || "no reason given"}` });
  } catch (err) {
    showError(errBox, err);
    markInvalid(err);
  } finally {
    if (singleJob === job) btn.disabled = false;
  }
}

// ------------------------------------------------------- the long-form tab

let storyJob = { stopped: true };
let estimateTimer = 0;
let estimateSeq = 0; // the latest estimate asked: an older answer is dropped
// videoVersions are the catalog's video model_versions: the video's model
// and each scene's own are chosen among them.
let videoVersions = [];

// fillSceneModel lists the video models in a scene's model select, first
// "(the video's model)"; a model chosen before stays chosen.
function fillSceneModel(select) {
  const keep = select.value;
  select.replaceChildren(el("option", { value: "", text: "(the video's model)" }), ...videoVersions.map((v) => el("option", { value: v, text: v })));
  if (videoVersions.includes(keep)) select.value = keep;
}

function addScene(text = "") {
  const li = $("#scene-template").content.firstElementChild.cloneNode(true);
  $(".scene-prompt", li).value = text;
  fillSceneModel($(".scene-model", li));
  $(".scene-prompt", li).addEventListener("input", scheduleEstimate);
  $(".scene-narration", li).addEventListener("input", scheduleEstimate);
  $(".scene-model", li).addEventListener("change", scheduleEstimate);
  $(".remove-scene", li).addEventListener("click", () => { li.remove(); scheduleEstimate(); });
  $("#scenes").append(li);
  scheduleEstimate();
}

// sceneList is the form's scenes as the API takes them, numbered in
// order, each with its own narration and model when it has one.
function sceneList() {
  return $$("#scenes .scene").map((li, i) => {
    const s = { scene_number: i + 1, prompt: $(".scene-prompt", li).value };
    const narration = $(".scene-narration", li).value.trim();
    if (narration) s.narration = narration;
    const model = $(".scene-model", li).value;
    if (model) s.model = model;
    return s;
  });
}

function scheduleEstimate() {
  clearTimeout(estimateTimer);
  estimateTimer = setTimeout(estimate, 250);
}

// studioOptions are the form's production options as the API takes them:
// only what differs from the service's defaults, and nothing about the
// voice or captions of a video without narration.
function studioOptions() {
  const o = { aspect_ratio: $("#story-aspect").value, transition: $("#story-transition").value };
  if ($("#story-narration").checked) {
    if ($("#story-voice").value) o.voice = $("#story-voice").value;
    if ($("#story-captions").value) o.captions = $("#story-captions").value;
    const speed = parseFloat($("#story-speed").value);
    if (!Number.isNaN(speed) && speed !== 1) o.narration_speed = speed;
  } else if ($("#story-captions").value === "none") {
    o.captions = "none";
  }
  const music = $("#story-music").value.trim();
  if (music) {
    o.music_url = music;
    const vol = parseFloat($("#story-music-volume").value);
    if (!Number.isNaN(vol)) o.music_volume = vol;
  }
  return o;
}

// audioType is the upload content type of a picked music file: the
// browser's name for it, as the service names the audio it takes
// (audio/wav, audio/mpeg, audio/mp4).
function audioType(file) {
  const aliases = { "audio/x-wav": "audio/wav", "audio/wave": "audio/wav", "audio/mp3": "audio/mpeg", "audio/x-m4a": "audio/mp4", "audio/m4a": "audio/mp4" };
  return aliases[file.type] || file.type;
}

// optionsText describes the studio the service applied (the status view's
// studio, its defaults written out), or the one the form will ask for
// (formStudio).
function optionsText(st) {
  const parts = [st.aspect_ratio === "portrait" ? "portrait 720x1280" : "landscape 1280x720", st.transition === "crossfade" ? "crossfade" : "cuts"];
  if (st.voice) parts.push(`voice ${st.voice}`);
  parts.push(`captions ${st.captions}`);
  if (st.narration_speed != null) parts.push(`narration ×${st.narration_speed}`);
  if (st.music_url) parts.push(`music at ${st.music_volume} (${musicSource(st.music_url)})`);
  return "Options: " + parts.join(" · ");
}

// musicSource names where music comes from: a file (uploaded, or a data:
// URI) or its URL's host.
function musicSource(url) {
  if (/^(data|mediagen):/i.test(url)) return "file";
  try { return new URL(url).host; } catch { return url; }
}

// formStudio is the studio the form asks for, its defaults written out as
// the status view will show them: the language's default voice, sidecar
// captions when narrated, none otherwise.
function formStudio() {
  const o = studioOptions(), narrated = $("#story-narration").checked;
  const speed = parseFloat($("#story-speed").value);
  return {
    aspect_ratio: o.aspect_ratio, transition: o.transition,
    voice: narrated ? o.voice || $("#story-voice").firstElementChild.dataset.voice || "(the language's default)" : null,
    captions: o.captions || (narrated ? "sidecar" : "none"),
    narration_speed: narrated ? (Number.isNaN(speed) ? 1 : speed) : null,
    music_url: o.music_url || null, music_volume: o.music_volume ?? null,
  };
}

// renderPreview shows what the form will make: its length and frame, the
// options, each scene with its model, its length and what is spoken over
// it, and the estimate's price (quote; null when there is none).
function renderPreview(scenes, quote) {
  const narrated = $("#story-narration").checked, model = $("#story-model").value;
  const seconds = quote ? ` · ${quote.scene_info.duration_per_scene} s` : "";
  const items = scenes.map((s) => {
    const spoken = !narrated ? "silent" : s.narration ? `narration: “${s.narration}”` : "its prompt spoken";
    return el("li", { class: "preview-scene" }, `Scene ${s.scene_number} · ${s.model || model}${s.model ? " (its own)" : ""}${seconds} · ${spoken}`);
  });
  $("#story-preview").replaceChildren(
    el("p", { text: `Preview: ${scenes.length} scenes` + (quote ? `, ${quote.duration} s` : "") }),
    el("p", { text: optionsText(formStudio()) }),
    el("ul", {}, ...items),
    el("p", { id: "story-preview-total", text: quote ? `Total: ${quote.credits.total} credits` : "Total: no estimate" }),
  );
}

async function estimate() {
  const box = $("#story-estimate");
  const scenes = sceneList();
  const seq = ++estimateSeq;
  if (!$("#api-key").value.trim() || scenes.length === 0 || !$("#story-model").value) {
    renderPreview(scenes, null);
    if (!$("#api-key").value.trim()) box.textContent = "Paste an API key to see the estimate.";
    else if (scenes.length === 0) box.textContent = "Add a scene.";
    // else the models are not read yet: loadModels asks again once they are.
    return;
  }
  // The estimate checks the options as the create will. The scenes
  // themselves are sent (each priced by its own model, its narration
  // checked) once each has its prompt, or once one names its own model
  // (a missing prompt is then the service's to name); until then their
  // number is, all made by the video's model.
  const whole = scenes.every((s) => s.prompt.trim()) || scenes.some((s) => s.model);
  try {
    const e = await api("POST", "/api/long-story/videos/estimate", {
      model: $("#story-model").value, language_code: $("#story-language").value,
      enable_narration: $("#story-narration").checked, ...studioOptions(), ...(whole ? { scenes } : { scene_count: scenes.length }),
    });
    if (seq !== estimateSeq) return;
    const mean = scenes.some((s) => s.model) ? " on average" : "";
    box.textContent = `Estimate: ${e.scene_info.total_scenes} scenes × ${e.scene_info.duration_per_scene} s = ${e.duration} s · ` +
      `${e.credits.total} credits (${e.credits.per_second} per second${mean})`;
    box.dataset.credits = e.credits.total;
    renderPreview(scenes, e);
  } catch (err) {
    if (seq !== estimateSeq) return;
    const fields = (err.details || []).map((d) => `${d.field}: ${d.message}`);
    box.textContent = "No estimate: " + err.message + (fields.length ? " (" + fields.join("; ") + ")" : "");
    delete box.dataset.credits;
    renderPreview(scenes, null);
  }
}

// loadVoices lists the narration language's voices
// (GET /api/long-story/voices), each with its preview clip.
async function loadVoices() {
  const select = $("#story-voice"), lang = $("#story-language").value;
  const keep = select.value;
  select.replaceChildren(el("option", { value: "", text: "(the language's default)" }));
  $("#story-voice-preview").disabled = true;
  if (!$("#api-key").value.trim()) return;
  try {
    const list = await api("GET", `/api/long-story/voices?language_code=${encodeURIComponent(lang)}`);
    if (lang !== $("#story-language").value) return; // a newer language was chosen meanwhile
    for (const v of list.voices || []) {
      const o = el("option", { value: v.id, text: `${v.name} (${v.gender}${v.default ? ", default" : ""})` });
      o.dataset.preview = v.preview_url || "";
      if (v.default) Object.assign(select.firstElementChild.dataset, { preview: v.preview_url || "", voice: v.id });
      select.append(o);
    }
    if ([...select.options].some((o) => o.value === keep)) select.value = keep;
    $("#story-voice-preview").disabled = !select.selectedOptions[0]?.dataset.preview;
    scheduleEstimate(); // the preview names the default voice
  } catch (err) {
    select.firstElementChild.textContent = "(no voices: " + err.message + ")";
  }
}

// previewVoice plays the chosen voice's preview clip.
function previewVoice() {
  const url = $("#story-voice").selectedOptions[0]?.dataset.preview;
  if (!url) return;
  const audio = $("#story-voice-audio");
  audio.src = url;
  audio.play().catch(() => {});
}

function renderScenes(view) {
  const list = $("#story-scenes");
  if (!Array.isArray(view.scenes)) { list.replaceChildren(); return; }
  list.replaceChildren(...view.scenes.map((s) => el("li", {}, `Scene ${s.scene_number} `, badge(s.status))));
}

async function submitStory(ev) {
  ev.preventDefault();
  storyJob.stopped = true;
  const job = { stopped: false };
  storyJob = job;
  const status = $("#story-status"), errBox = $("#story-error"), out = $("#story-output");
  showError(errBox, null);
  out.replaceChildren();
  $("#story-scenes").replaceChildren();
  $("#story-regen").hidden = true;
  const scenes = sceneList();
  const options = studioOptions();
  const body = {
    prompt: $("#story-prompt").value, scenes, language_code: $("#story-language").value, model: $("#story-model").value,
    video_style: $("#story-style").value, enable_narration: $("#story-narration").checked, ...options,
  };
  $("#story-options").textContent = "";
  const btn = $("#story-create");
  btn.disabled = true;
  const start = Date.now();
  try {
    const created = await api("POST", "/api/long-story/videos", body);
    statusLine(status, [`Video ${created.video_id}`, badge(created.status), created.message]);
    const vid = encodeURIComponent(created.video_id);
    const final = await follow(`/api/long-story/videos/${vid}/events`, `/api/long-story/videos/${vid}`, (v) => {
      const pct = typeof v.progress === "number" ? `${Math.round(v.progress)} %` : null;
      statusLine(status, [`Video ${created.video_id}`, badge(v.status), pct, `${scenes.length} scenes`, elapsed(start)]);
      renderScenes(v);
      if (v.studio) $("#story-options").textContent = optionsText(v.studio);
    }, job);
    if (!final) return;
    if (final.studio) $("#story-options").textContent = optionsText(final.studio);
    if (final.status === "completed") {
      statusLine(status, [`Video ${created.video_id}`, badge(final.status), `${final.total_duration.toFixed(1)} s`, elapsed(start)]);
      showStoryVideo(out, final);
      showRegenerate(created.video_id, scenes.length);
    } else {
      showError(errBox, { message: `${final.status}: ${final.error || "no reason given"}` });
    }
  } catch (err) {
    showError(errBox, err);
  } finally {
    if (storyJob === job) btn.disabled = false;
  }
}

// showStoryVideo shows a completed video and its captions link.
function showStoryVideo(out, view) {
  renderOutputs(out, [view.final_video_url], "video", "story-video");
  if (view.captions_url) {
    $("figure", out).append(" · ", el("a", { id: "story-captions-link", href: view.captions_url, target: "_blank", rel: "noopener", text: "captions (WebVTT)" }));
  }
}

// storyVideoID is the completed video the re-render control acts on.
let storyVideoID = "";

// showRegenerate offers to re-render one of the completed video's scenes.
function showRegenerate(id, scenes) {
  storyVideoID = id;
  $("#story-regen-scene").replaceChildren(...Array.from({ length: scenes }, (_, i) => el("option", { value: String(i + 1), text: `Scene ${i + 1}` })));
  $("#story-regen").hidden = false;
}

// submitRegenerate re-renders one scene
// (POST /api/long-story/videos/{id}/scenes/{n}/regenerate), follows the
// video's stream until the regenerate ends and shows the new revision.
async function submitRegenerate(ev) {
  ev.preventDefault();
  storyJob.stopped = true;
  const job = { stopped: false };
  storyJob = job;
  const status = $("#story-status"), errBox = $("#story-error"), out = $("#story-output");
  showError(errBox, null);
  const n = $("#story-regen-scene").value, body = {};
  const prompt = $("#story-regen-prompt").value.trim(), narration = $("#story-regen-narration").value.trim();
  if (prompt) body.prompt = prompt;
  if (narration) body.narration = narration;
  const btn = $("#story-regen-go");
  btn.disabled = true;
  const start = Date.now();
  try {
    const vid = encodeURIComponent(storyVideoID);
    const started = await api("POST", `/api/long-story/videos/${vid}/scenes/${n}/regenerate`, body);
    const target = started.regenerating.revision;
    const line = (extra) => statusLine(status, [`Video ${storyVideoID}`, badge("processing"), `re-rendering scene ${n} (revision ${target})`, extra]);
    line(null);
    const final = await follow(`/api/long-story/videos/${vid}/events`, `/api/long-story/videos/${vid}`, (v) => {
      if (v.regenerating) line(elapsed(start));
    }, job, (v) => !v.regenerating);
    if (!final) return;
    if (final.revision === target) {
      statusLine(status, [`Video ${storyVideoID}`, badge(final.status), `revision ${final.revision}: scene ${n} re-rendered`, elapsed(start)]);
      showStoryVideo(out, final);
    } else {
      statusLine(status, [`Video ${storyVideoID}`, badge(final.status), `revision ${final.revision}`]);
      showError(errBox, { message: `The re-render of scene ${n} ended without a new revision (its credits are back); the video stays at revision ${final.revision}.` });
    }
  } catch (err) {
    showError(errBox, err);
  } finally {
    if (storyJob === job) btn.disabled = false;
  }
}

// ------------------------------------------------------------------ start

function selectTab(which) {
  for (const t of ["single", "story"]) {
    $(`#tab-${t}`).setAttribute("aria-selected", String(t === which));
    $(`#panel-${t}`).hidden = t !== which;
  }
  if (which === "story") { scheduleEstimate(); loadVoices(); }
}

async function loadModels() {
  const errBox = $("#single-error");
  try {
    models = (await api("GET", "/api/models", undefined, { auth: false })).models;
  } catch (err) {
    showError(errBox, { message: `Could not read the catalog from ${apiRoot($("#base-url").value) || "(no API URL)"}/api/models: ${err.message}` });
    return;
  }
  showError(errBox, null);
  const variant = $("#variant"), storyModel = $("#story-model");
  variant.replaceChildren();
  storyModel.replaceChildren();
  for (const kind of ["image", "video"]) {
    const group = el("optgroup", { label: kind === "image" ? "Images" : "Videos" });
    for (const m of models.filter((x) => x.kind === kind)) {
      group.append(el("option", { value: `${m.model}/${m.version}`, text: `${m.version} (${m.model})` }));
      if (kind === "video") storyModel.append(el("option", { value: m.version, text: m.version, selected: m.version === "beta-2" }));
    }
    variant.append(group);
  }
  videoVersions = models.filter((m) => m.kind === "video").map((m) => m.version);
  $$("#scenes .scene-model").forEach(fillSceneModel);
  const last = saved.get("variant");
  if (models.some((m) => `${m.model}/${m.version}` === last)) variant.value = last;
  buildForm(models.find((m) => `${m.model}/${m.version}` === variant.value));
  scheduleEstimate();
}

function start() {
  const key = $("#api-key"), base = $("#base-url");
  key.value = saved.get("apiKey");
  base.value = saved.get("baseUrl");
  base.placeholder = location.protocol.startsWith("http") ? `${location.origin} (this site)` : "https://…";
  key.addEventListener("input", () => { saved.set("apiKey", key.value.trim()); scheduleEstimate(); });
  base.addEventListener("change", () => { saved.set("baseUrl", base.value.trim()); loadModels(); });
  $("#tab-single").addEventListener("click", () => selectTab("single"));
  $("#tab-story").addEventListener("click", () => selectTab("story"));
  $("#variant").addEventListener("change", () => {
    saved.set("variant", $("#variant").value);
    buildForm(models.find((m) => `${m.model}/${m.version}` === $("#variant").value));
  });
  $("#single-form").addEventListener("submit", submitSingle);
  $("#story-form").addEventListener("submit", submitStory);
  $("#story-regen").addEventListener("submit", submitRegenerate);
  $("#add-scene").addEventListener("click", () => addScene());
  $("#story-model").addEventListener("change", scheduleEstimate);
  $("#story-language").addEventListener("change", () => { loadVoices(); scheduleEstimate(); });
  $("#story-voice").addEventListener("change", () => {
    $("#story-voice-preview").disabled = !$("#story-voice").selectedOptions[0]?.dataset.preview;
    scheduleEstimate();
  });
  $("#story-voice-preview").addEventListener("click", previewVoice);
  for (const id of ["#story-narration", "#story-captions", "#story-aspect", "#story-transition", "#story-speed", "#story-music", "#story-music-volume"]) {
    $(id).addEventListener("change", scheduleEstimate);
  }
  $("#story-music-file").addEventListener("change", async () => {
    const f = $("#story-music-file").files[0];
    if (!f) return;
    const errBox = $("#story-error"), picker = $("#story-music-file");
    showError(errBox, null);
    picker.disabled = true;
    try {
      $("#story-music").value = await upload(f, audioType(f));
      scheduleEstimate();
    } catch (err) {
      showError(errBox, err);
    } finally {
      picker.disabled = false;
    }
  });
  addScene();
  addScene();
  loadModels();
}

start();
