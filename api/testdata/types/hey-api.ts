// A client made by @hey-api/openapi-ts from api/openapi.yaml: it creates an
// image and a video generation and polls each to its end. api/types_test.go
// generates ./client beside it, compiles it with tsc and runs main against
// a local runtime ($MEDIAGEN_BASE_URL, $MEDIAGEN_API_KEY).
import { client } from "./client/client.gen";
import { createGeneration, getGeneration } from "./client/sdk.gen";
import type { GenerateRequest, GenerationStatus } from "./client/types.gen";

declare const process: { env: { [name: string]: string | undefined } };

client.setConfig({ baseUrl: process.env.MEDIAGEN_BASE_URL ?? "http://127.0.0.1:8080", auth: () => process.env.MEDIAGEN_API_KEY });

async function run(body: GenerateRequest): Promise<GenerationStatus> {
  const created = await createGeneration({ body, throwOnError: true });
  for (;;) {
    const { data } = await getGeneration({ path: { id: created.data.uuid }, throwOnError: true });
    if (data.status !== "processing") return data;
    await new Promise((done) => setTimeout(done, 1000));
  }
}

// main answers each generation's final status and outputs.
export async function main(): Promise<{ status: string; output: string[] }[]> {
  const done = [
    await run({ model: "provider-a", model_version: "theta-4-fast", input: { prompt: "a cat", aspect_ratio: "16:9" } }),
    await run({ model: "provider-b", model_version: "beta-2", input: { prompt: "a paper boat", seconds: "4", aspect_ratio: "landscape" } }),
  ];
  return done.map((s) => ({ status: s.status, output: s.output }));
}

// @ts-expect-error theta-4-fast has no duration
export const wrongField: GenerateRequest = { model: "provider-a", model_version: "theta-4-fast", input: { prompt: "a cat", duration: "4" } };
// @ts-expect-error beta-2 takes seconds 4, 8 or 12
export const wrongValue: GenerateRequest = { model: "provider-b", model_version: "beta-2", input: { prompt: "p", seconds: "5", aspect_ratio: "landscape" } };
// @ts-expect-error beta-2 needs seconds and aspect_ratio
export const missingField: GenerateRequest = { model: "provider-b", model_version: "beta-2", input: { prompt: "p" } };
