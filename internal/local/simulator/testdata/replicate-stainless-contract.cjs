// Runs the Stainless-generated Replicate client (npm replicate-stainless,
// from tools/node_modules) against the simulator's Replicate face: SIM_URL,
// SIM_TOKEN, VIDEO_MODEL, IMAGE_MODEL. Each check prints one JSON line; any
// failure exits 1 with its reason.
const path = require("node:path");
const { Replicate, UnprocessableEntityError } = require(path.join(process.env.TOOLS, "node_modules", "replicate-stainless"));

const client = new Replicate({ bearerToken: process.env.SIM_TOKEN, baseURL: process.env.SIM_URL + "/v1", maxRetries: 0 });
const split = (m) => { const [model_owner, model_name] = m.split("/"); return { model_owner, model_name }; };
const video = split(process.env.VIDEO_MODEL), image = split(process.env.IMAGE_MODEL);

const check = require("./check.cjs");

(async () => {
  const model = await client.models.get(image);
  check("models.get", model.latest_version && model.latest_version.openapi_schema, model.name);
  const version = await client.models.versions.get({ ...image, version_id: model.latest_version.id });
  check("models.versions.get", version.id === model.latest_version.id, version.id);

  // Create by model with Prefer: wait: the answer is final.
  const done = await client.models.predictions.create({ ...image, input: { prompt: "stainless" }, Prefer: "wait" });
  check("models.predictions.create with Prefer: wait", done.status === "succeeded" && done.output.length === 1, done.status);
  const got = await client.predictions.get({ prediction_id: done.id });
  check("predictions.get", got.id === done.id && got.output[0] === done.output[0], got.status);

  // Create by the bare version id, then cancel it.
  const v = await client.predictions.create({ version: model.latest_version.id, input: { prompt: "slow [simulate:slow]" } });
  check("predictions.create by version", v.status === "starting" && v.model === process.env.IMAGE_MODEL, v);
  const canceled = await client.predictions.cancel({ prediction_id: v.id });
  check("predictions.cancel", canceled.status === "canceled", canceled.status);

  const page = await client.predictions.list();
  check("predictions.list", page.results[0].id === v.id, page.results.map((r) => r.id));

  try {
    await client.models.predictions.create({ ...video, input: { prompt: "typed", ...JSON.parse(process.env.BAD_INPUT) } });
    check("422 on a wrong type", false, "accepted");
  } catch (e) {
    check("422 on a wrong type", e instanceof UnprocessableEntityError && e.status === 422, String(e));
  }

  const secret = await client.webhooks.default.secret.get();
  check("webhooks.default.secret.get", secret.key && secret.key.startsWith("whsec_"), secret.key && secret.key.slice(0, 6));
})().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
