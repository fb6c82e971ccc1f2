// check prints one JSON line per contract check; a failed one exits 1 with
// its reason, so the Go test reports it.
module.exports = function check(name, ok, detail) {
  console.log(JSON.stringify({ check: name, ok: !!ok, detail }));
  if (!ok) {
    console.error(`${name} failed: ${JSON.stringify(detail)}`);
    process.exit(1);
  }
};
