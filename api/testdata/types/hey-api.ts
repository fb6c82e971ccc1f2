// A client made by @hey-api/openapi-ts from api/openapi.yaml: it creates an
// image and a video generation and polls each to its end. api/types_test.go
// generates ./client beside it and runs tsc --noEmit.
import { client } from "./client/client.gen";
import { createGeneration, getGeneration } from "./client/sdk.gen";
import type { GenerateRequest, GenerationStatus } from "./client/types.gen";

client.setConfig({ baseUrl: "http://127.0.0.1:8080", auth: () => "mgk_example" });

async function run(body: GenerateRequest): Promise<GenerationStatus> {
  const created = await createGeneration({ body, throwOnError: true });
  for (;;) {
    const { data } = await getGeneration({ path: { id: created.data.uuid }, throwOnError: true });
    if (data.status !== "processing") return data;
    await new Promise((done) => setTimeout(done, 1000));
  }
}

export async function main(): Promise<string[]> {
  const done = [
    await run({ model: "provider-a", model_version: "theta-4-fast", input: { prompt: "a cat", aspect_ratio: "16:9" } }),
    await run({ model: "provider-b", model_version: "beta-2", input: { prompt: "a paper boat", seconds: "4", aspect_ratio: "landscape" } }),
  ];
  return done.flatMap((s) => s.output);
}

// @ts-expect-error theta-4-fast has no duration
export const wrongField: GenerateRequest = { model: "provider-a", model_version: "theta-4-fast", input: { prompt: "a cat", duration: "4" } };
// @ts-expect-error beta-2 takes seconds 4, 8 or 12
export const wrongValue: GenerateRequest = { model: "provider-b", model_version: "beta-2", input: { prompt: "p", seconds: "5", aspect_ratio: "landscape" } };
// @ts-expect-error beta-2 needs seconds and aspect_ratio
export const missingField: GenerateRequest = { model: "provider-b", model_version: "beta-2", input: { prompt: "p" } };
