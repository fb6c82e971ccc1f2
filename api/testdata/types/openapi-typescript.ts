// A client typed by openapi-typescript (default flags) from api/openapi.yaml:
// it creates an image and a video generation and polls each to its end.
// api/types_test.go generates ./schema.ts beside it and runs tsc --noEmit.
import type { components, paths } from "./schema";

type GenerateBody = paths["/api/generations/generate"]["post"]["requestBody"]["content"]["application/json"];
type Record = components["schemas"]["GenerationRecord"];
type Status = components["schemas"]["GenerationStatus"];

const base = "http://127.0.0.1:8080";
const headers = { Authorization: "Bearer mgk_example", "Content-Type": "application/json", accept: "application/json" };

async function create(body: GenerateBody): Promise<Record> {
  const r = await fetch(`${base}/api/generations/generate`, { method: "POST", headers, body: JSON.stringify(body) });
  return (await r.json()) as Record;
}

async function poll(uuid: string): Promise<Status> {
  for (;;) {
    const r = await fetch(`${base}/api/generations/status/${uuid}`, { headers });
    const s = (await r.json()) as Status;
    if (s.status !== "processing") return s;
    await new Promise((done) => setTimeout(done, 1000));
  }
}

export async function main(): Promise<string[]> {
  const image = await create({ model: "provider-a", model_version: "theta-4-fast", input: { prompt: "a cat", aspect_ratio: "16:9" } });
  const video = await create({ model: "provider-b", model_version: "beta-2", input: { prompt: "a paper boat", seconds: "4", aspect_ratio: "landscape" } });
  const done = [await poll(image.uuid), await poll(video.uuid)];
  return done.flatMap((s) => s.output);
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
