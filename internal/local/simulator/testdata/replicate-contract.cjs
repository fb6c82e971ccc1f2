// Runs the official Replicate JavaScript client (npm replicate, from
// tools/node_modules) against the simulator: SIM_URL (the API root, the
// client's baseUrl is SIM_URL/v1), SIM_TOKEN, VIDEO_MODEL, IMAGE_MODEL.
// The outputs are served over https with the simulator's CA, which
// NODE_EXTRA_CA_CERTS makes trusted. Each check prints one JSON line; any
// failure exits 1 with its reason.
const http = require("node:http");
const path = require("node:path");
const Replicate = require(path.join(process.env.TOOLS, "node_modules", "replicate"));
const { validateWebhook } = Replicate;

const base = process.env.SIM_URL + "/v1";
const client = new Replicate({ auth: process.env.SIM_TOKEN, baseUrl: base });
const video = process.env.VIDEO_MODEL, image = process.env.IMAGE_MODEL;

const check = require("./check.cjs");

// A webhook receiver: the events the simulator posts, with their headers.
function receiver() {
  const events = [];
  const waiters = [];
  const srv = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      events.push({ headers: req.headers, body });
      res.writeHead(204).end();
      while (waiters.length) waiters.shift()();
    });
  });
  return new Promise((resolve) => srv.listen(0, "127.0.0.1", () => resolve({
    url: `http://127.0.0.1:${srv.address().port}/hook`, events, srv,
    async until(n, ms = 30000) {
      const end = Date.now() + ms;
      while (events.length < n && Date.now() < end) await new Promise((r) => { waiters.push(r); setTimeout(r, 200); });
      return events;
    },
  })));
}

(async () => {
  // Models publish their input schema.
  const model = await client.models.get(...video.split("/"));
  const props = model.latest_version.openapi_schema.components.schemas.Input.properties;
  check("models.get publishes typed inputs", model.latest_version.id && props.prompt.type === "string", Object.keys(props));
  const version = await client.models.versions.get(...video.split("/"), model.latest_version.id);
  check("models.versions.get", version.id === model.latest_version.id, version.id);

  // Create by model, wait by polling, then read it back.
  let p = await client.predictions.create({ model: image, input: { prompt: "a contract test" } });
  check("predictions.create by model", p.id && p.status === "starting" && p.urls.get.endsWith(p.id), p);
  p = await client.wait(p, { interval: 100 });
  check("wait polls to succeeded", p.status === "succeeded" && Array.isArray(p.output) && p.output.length === 1, p);
  const again = await client.predictions.get(p.id);
  check("predictions.get", again.id === p.id && again.status === "succeeded", again.status);
  const file = await fetch(p.output[0]);
  check("output downloads from another host", file.ok && new URL(p.output[0]).host !== new URL(base).host, p.output[0]);

  // run() with owner/name:version creates by the bare version id and
  // blocks (Prefer: wait) until the output is there: a FileOutput (the
  // client makes one only of an https: URL), whose url() and blob() work.
  const out = await client.run(`${video}:${model.latest_version.id}`, { input: { prompt: "a run", ...JSON.parse(process.env.VIDEO_INPUT) } });
  check("run answers a FileOutput", out instanceof ReadableStream && typeof out.url === "function", typeof out);
  check("FileOutput.url() is the https output", out.url().protocol === "https:" && out.url().pathname.includes("/files/"), String(out.url()));
  const blob = await out.blob();
  check("FileOutput.blob() holds the video", blob.size > 0 && blob.type === "video/mp4", { size: blob.size, type: blob.type });

  // Image models publish an array Output, and run answers an array.
  const imageModel = await client.models.get(...image.split("/"));
  check("an image model's Output schema is an array", imageModel.latest_version.openapi_schema.components.schemas.Output.type === "array",
    imageModel.latest_version.openapi_schema.components.schemas.Output);
  const [first] = await client.run(image, { input: { prompt: "an array" } });
  check("run of an image model answers an array of FileOutput", first && first.url().protocol === "https:", String(first && first.url()));

  // A Buffer input uploads through POST /v1/files (the client's default),
  // and the input carries the file's urls.get.
  const uploaded = await client.files.create(Buffer.from("\x89PNG not really"), { purpose: "contract" });
  check("files.create answers the file", uploaded.id && uploaded.urls.get.endsWith(`/v1/files/${uploaded.id}`) && uploaded.size === 16, uploaded);
  const got = await client.files.get(uploaded.id);
  check("files.get", got.id === uploaded.id && got.checksums.sha256 === uploaded.checksums.sha256, got);
  const withFile = await client.predictions.create({ model: image, input: { prompt: "with a file", image: Buffer.from("png bytes") } });
  check("a Buffer input is sent as an uploaded file's URL", /\/v1\/files\/[a-z0-9]+$/.test(withFile.input.image), withFile.input);

  // models.list pages through every model.
  const names = [];
  for await (const page of client.paginate(client.models.list)) names.push(...page.map((m) => `${m.owner}/${m.name}`));
  check("models.list", names.includes(video) && names.includes(image), names);

  // A value of the wrong type is refused with 422 and the field named.
  try {
    await client.predictions.create({ model: video, input: { prompt: "typed", ...JSON.parse(process.env.BAD_INPUT) } });
    check("422 on a wrong type", false, "accepted");
  } catch (e) {
    check("422 on a wrong type", e.response && e.response.status === 422 && /invalid_fields/.test(e.message), e.message);
  }

  // Cancel a job still running.
  const slow = await client.predictions.create({ model: video, input: { prompt: "slow [simulate:slow]" } });
  const canceled = await client.predictions.cancel(slow.id);
  check("predictions.cancel", canceled.status === "canceled", canceled.status);
  const list = await client.predictions.list();
  check("predictions.list, newest first", list.results[0].id === slow.id, list.results.map((r) => r.id));

  // Webhooks: the filter is honoured, and every call verifies with the
  // default webhook secret.
  const hooks = await receiver();
  const { key } = await client.webhooks.default.secret.get();
  check("webhooks.default.secret.get", key && key.startsWith("whsec_"), key && key.slice(0, 6));
  const h = await client.predictions.create({ model: image, input: { prompt: "hooked" }, webhook: hooks.url,
    webhook_events_filter: ["start", "completed"] });
  await client.wait(h, { interval: 100 });
  const events = await hooks.until(2);
  const statuses = events.map((e) => JSON.parse(e.body).status);
  check("webhook events follow the filter", statuses.length === 2 && statuses[0] === "starting" && statuses[1] === "succeeded", statuses);
  for (const e of events) {
    const valid = await validateWebhook({ id: e.headers["webhook-id"], timestamp: e.headers["webhook-timestamp"],
      signature: e.headers["webhook-signature"], body: e.body, secret: key });
    check("validateWebhook accepts the signature", valid === true, e.headers);
  }
  const forged = await validateWebhook({ id: events[0].headers["webhook-id"], timestamp: events[0].headers["webhook-timestamp"],
    signature: events[0].headers["webhook-signature"], body: events[0].body.replace("starting", "succeeded"), secret: key });
  check("validateWebhook refuses a changed body", forged === false, forged);
  hooks.srv.close();
})().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
