// Runs the official fal client (npm @fal-ai/client, from tools/node_modules)
// against the simulator's fal face. The client builds https://queue.fal.run,
// https://fal.run and https://rest.fal.ai URLs itself; its fetch option
// sends them to SIM_URL's /fal, /fal-run and /fal-rest instead, which is
// all a proxy in front of fal would change. Outputs and uploads are served
// over https with the simulator's CA (NODE_EXTRA_CA_CERTS). Each check
// prints one JSON line; any failure exits 1 with its reason.
const http = require("node:http");
const path = require("node:path");
const crypto = require("node:crypto");
const { createFalClient, ValidationError } = require(path.join(process.env.TOOLS, "node_modules", "@fal-ai", "client"));

const sim = process.env.SIM_URL, falURL = sim + "/fal";
const redirect = (url) => String(url).replace(/^https:\/\/queue\.fal\.run/, falURL)
  .replace(/^https:\/\/fal\.run/, sim + "/fal-run").replace(/^https:\/\/rest\.fal\.ai/, sim + "/fal-rest");
const fal = createFalClient({ credentials: process.env.SIM_TOKEN, fetch: (url, init) => fetch(redirect(url), init) });
const video = process.env.VIDEO_APP, image = process.env.IMAGE_APP;

const check = require("./check.cjs");

(async () => {
  // subscribe: submit, poll the status until COMPLETED, read the result.
  const updates = [];
  const result = await fal.subscribe(image, { input: { prompt: "a fal contract test" }, pollInterval: 100,
    onQueueUpdate: (u) => updates.push(u.status) });
  check("subscribe returns the images", result.data.images && result.data.images[0].url.includes("/files/") && result.requestId, result);
  check("status goes to COMPLETED", updates[updates.length - 1] === "COMPLETED", updates);

  // subscribe in streaming mode: the status arrives over SSE until
  // COMPLETED, then the result.
  const streamed = [];
  const viaStream = await fal.subscribe(image, { input: { prompt: "a streamed fal test" }, mode: "streaming",
    onQueueUpdate: (u) => streamed.push(u.status) });
  check("subscribe({mode: \"streaming\"}) returns the images", viaStream.data.images && viaStream.data.images.length === 1, viaStream);
  check("the status stream ends with COMPLETED", streamed.length > 0 && streamed[streamed.length - 1] === "COMPLETED", streamed);

  // fal.run waits for the result and answers it, not the queue's envelope.
  const run = await fal.run(image, { input: { prompt: "a synchronous fal test" } });
  check("fal.run answers the result itself", run.data.images && run.data.images[0].url.startsWith("https://") && !run.data.request_id && run.requestId, run);

  // storage.upload: initiate, PUT, then the file is served at its URL;
  // a Blob input is uploaded the same way and sent as its URL.
  const bytes = new Uint8Array([137, 80, 78, 71, 1, 2, 3]);
  const fileURL = await fal.storage.upload(new Blob([bytes], { type: "image/png" }));
  const fetched = await fetch(fileURL);
  const stored = new Uint8Array(await fetched.arrayBuffer());
  check("storage.upload serves the file at its URL", fetched.ok && fileURL.startsWith("https://") && stored.length === bytes.length &&
    stored.every((b, i) => b === bytes[i]) && fetched.headers.get("content-type") === "image/png", fileURL);
  const withBlob = await fal.queue.submit(image, { input: { prompt: "with a blob", image_url: new Blob([bytes], { type: "image/png" }) } });
  // What the app received (the simulator keeps one record per request,
  // which its Replicate face shows).
  const sent = await (await fetch(`${sim}/v1/predictions/${withBlob.request_id}`, { headers: { Authorization: `Bearer ${process.env.SIM_TOKEN}` } })).json();
  check("a Blob input is sent as its uploaded file's URL", /^https:\/\/.*\/uploads\//.test(sent.input && sent.input.image_url), sent.input);

  // queue.submit on an app id with a sub-path; status has queue_position.
  const sub = await fal.queue.submit(`${video}/text-to-video`, { input: { prompt: "queued [simulate:slow]", ...JSON.parse(process.env.VIDEO_INPUT) } });
  check("queue.submit answers the queue's URLs", sub.request_id && sub.status_url.endsWith(`/requests/${sub.request_id}/status`) &&
    !sub.status_url.includes("text-to-video"), sub);
  const st = await fal.queue.status(video, { requestId: sub.request_id });
  check("queue.status IN_QUEUE with queue_position", st.status === "IN_QUEUE" && typeof st.queue_position === "number", st);
  await fal.queue.cancel(video, { requestId: sub.request_id });
  const after = await fal.queue.status(video, { requestId: sub.request_id });
  check("queue.cancel", after.status === "COMPLETED", after);

  // A value of the wrong type is a ValidationError naming the field.
  try {
    await fal.queue.submit(video, { input: { prompt: "typed", ...JSON.parse(process.env.BAD_INPUT) } });
    check("422 on a wrong type", false, "accepted");
  } catch (e) {
    check("422 on a wrong type", e instanceof ValidationError && e.fieldErrors.length > 0, e.body);
  }

  // Webhook: fal_webhook receives the result, signed with a key of the JWKS.
  let delivered;
  const got = new Promise((resolve) => (delivered = resolve));
  const srv = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => { res.writeHead(200).end(); delivered({ headers: req.headers, body: Buffer.concat(chunks) }); });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const hook = `http://127.0.0.1:${srv.address().port}/fal`;
  const { request_id } = await fal.queue.submit(image, { input: { prompt: "hooked" }, webhookUrl: hook });
  const w = await got;
  srv.close();
  const body = JSON.parse(w.body);
  check("webhook carries the result", body.request_id === request_id && body.status === "OK" && body.payload.images[0].url, body);
  const jwks = await (await fetch(falURL + "/.well-known/jwks.json")).json();
  const h = w.headers;
  const digest = crypto.createHash("sha256").update(w.body).digest("hex");
  const message = Buffer.from([h["x-fal-webhook-request-id"], h["x-fal-webhook-user-id"], h["x-fal-webhook-timestamp"], digest].join("\n"));
  const ok = jwks.keys.some((k) => crypto.verify(null, message, crypto.createPublicKey({ key: k, format: "jwk" }),
    Buffer.from(h["x-fal-webhook-signature"], "hex")));
  check("webhook signature verifies with the JWKS (ED25519)", ok && Math.abs(Date.now() / 1000 - Number(h["x-fal-webhook-timestamp"])) < 300, h);
  const tampered = jwks.keys.some((k) => crypto.verify(null, Buffer.concat([message, Buffer.from("x")]),
    crypto.createPublicKey({ key: k, format: "jwk" }), Buffer.from(h["x-fal-webhook-signature"], "hex")));
  check("a changed message does not verify", !tampered, tampered);
})().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
