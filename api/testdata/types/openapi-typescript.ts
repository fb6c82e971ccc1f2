// A client typed by openapi-typescript (default flags) from api/openapi.yaml:
// it creates an image and a video generation and polls each to its end.
// api/types_test.go generates ./schema.ts beside it, compiles it with tsc
// and runs main against a local runtime ($MEDIAGEN_BASE_URL,
// $MEDIAGEN_API_KEY).
import type { components, paths } from "./schema";

declare const process: { env: { [name: string]: string | undefined } };

type GenerateBody = paths["/api/generations/generate"]["post"]["requestBody"]["content"]["application/json"];
type Record = components["schemas"]["GenerationRecord"];
type Status = components["schemas"]["GenerationStatus"];

const base = process.env.MEDIAGEN_BASE_URL ?? "http://127.0.0.1:8080";
const headers = { Authorization: `Bearer ${process.env.MEDIAGEN_API_KEY}`, "Content-Type": "application/json", accept: "application/json" };

async function create(body: GenerateBody): Promise<Record> {
  const r = await fetch(`${base}/api/generations/generate`, { method: "POST", headers, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`create: HTTP ${r.status} ${await r.text()}`);
  return (await r.json()) as Record;
}

async function poll(uuid: string): Promise<Status> {
  for (;;) {
    const r = await fetch(`${base}/api/generations/status/${uuid}`, { headers });
    if (!r.ok) throw new Error(`status: HTTP ${r.status} ${await r.text()}`);
    const s = (await r.json()) as Status;
    if (s.status !== "processing") return s;
    await new Promise((done) => setTimeout(done, 1000));
  }
}

// main answers each generation's final status and outputs.
export async function main(): Promise<{ status: string; output: string[] }[]> {
  const image = await create({ model: "provider-a", model_version: "theta-4-fast", input: { prompt: "a cat", aspect_ratio: "16:9" } });
  const video = await create({ model: "provider-b", model_version: "beta-2", input: { prompt: "a paper boat", seconds: "4", aspect_ratio: "landscape" } });
  const done = [await poll(image.uuid), await poll(video.uuid)];
  return done.map((s) => ({ status: s.status, output: s.output }));
}

// A field the variant does not have:
// @ts-expect-error theta-4-fast has no duration
export const wrongField: GenerateBody = { model: "provider-a", model_version: "theta-4-fast", input: { prompt: "a cat", duration: "4" } };
// A value the variant does not take:
// @ts-expect-error beta-2 takes seconds 4, 8 or 12
export const wrongValue: GenerateBody = { model: "provider-b", model_version: "beta-2", input: { prompt: "p", seconds: "5", aspect_ratio: "landscape" } };
// A variant without its required field:
// @ts-expect-error beta-2 needs seconds and aspect_ratio
export const missingField: GenerateBody = { model: "provider-b", model_version: "beta-2", input: { prompt: "p" } };
