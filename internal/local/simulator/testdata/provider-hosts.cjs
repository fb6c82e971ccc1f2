// Preloaded (node --require) before a README example runs: the providers'
// hosts resolve to the simulator, as a hosts file or a proxy would make
// them, so that the examples run as written. SIM_URL is the simulator's
// API root: api.replicate.com is SIM_URL, queue.fal.run SIM_URL/fal,
// fal.run SIM_URL/fal-run and rest.fal.ai SIM_URL/fal-rest.
const sim = process.env.SIM_URL;
const hosts = [
  [/^https:\/\/api\.replicate\.com/, sim],
  [/^https:\/\/queue\.fal\.run/, sim + "/fal"],
  [/^https:\/\/fal\.run/, sim + "/fal-run"],
  [/^https:\/\/rest\.fal\.ai/, sim + "/fal-rest"],
];
const fetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  if (typeof input === "string" || input instanceof URL) {
    let url = String(input);
    for (const [from, to] of hosts) url = url.replace(from, to);
    return fetch(url, init);
  }
  return fetch(input, init);
};
