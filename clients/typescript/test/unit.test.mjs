// The retry rule and the error family against scripted answers (no server).
import assert from "node:assert/strict";
import { test } from "node:test";
import { GuardRejected, LimitExceeded, MMWClient, RateLimited, ServiceUnavailable, TransportError, errors } from "../dist/index.js";

function scripted(answers) {
  const seen = [];
  const fetch = async (url, init) => {
    seen.push({ url: String(url), init });
    const next = answers.shift();
    if (next instanceof Error) throw next;
    return next;
  };
  const slept = [];
  const client = new MMWClient({ baseUrl: "http://mmw.test", apiKey: "mmw_test", fetch, sleep: async (ms) => void slept.push(ms) });
  return { client, seen, slept };
}

const json = (status, body, headers = {}) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
const error = (status, code, headers) => json(status, { error: { code, message: "the server's words" } }, headers);
const dropped = () => Object.assign(new TypeError("fetch failed"), { cause: { code: "UND_ERR_SOCKET" } });

test("a 429 is retried after its Retry-After with the same idempotency key", async () => {
  const { client, seen, slept } = scripted([error(429, "rate_limited", { "Retry-After": "2" }), json(201, { id: "m1" })]);
  assert.equal((await client.remember("a fact", { fact_key: "k" })).id, "m1");
  assert.deepEqual(slept, [2000]);
  const keys = seen.map((s) => s.init.headers["X-Idempotency-Key"]);
  assert.equal(keys[0], keys[1]);
  assert.match(keys[0], /^mmw-ts-/);
  assert.deepEqual(JSON.parse(seen[1].init.body), { fact_key: "k", content: "a fact" });
});

test("a dropped answer retries a keyed write but never an unreferenced payment", async () => {
  let s = scripted([dropped(), json(201, { id: "m1" })]);
  await s.client.remember("x");
  assert.equal(s.seen.length, 2);
  s = scripted([dropped()]);
  await assert.rejects(s.client.ledgerRecord("transaction", "-1.00", "EUR"), TransportError);
  assert.equal(s.seen.length, 1);
  s = scripted([dropped(), json(200, { replayed: true })]);
  assert.equal((await s.client.ledgerRecord("transaction", "-1.00", "EUR", { reference: "INV-1" })).replayed, true);
});

test("a refused connection is retried for any call; 503 backs off then gives up", async () => {
  let s = scripted([Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } }), json(201, { given: true })]);
  assert.equal((await s.client.agentConsent(true)).given, true);
  s = scripted([error(503, "service_unavailable"), error(503, "service_unavailable"), error(503, "service_unavailable"), error(503, "service_unavailable")]);
  await assert.rejects(s.client.search("x"), ServiceUnavailable);
  assert.equal(s.slept.length, 3);
  assert.ok(s.slept[1] > s.slept[0] * 0.9);
});

test("a 503 is not retried for a write the server would not recognise", async () => {
  const { client, seen } = scripted([error(503, "service_unavailable", { "Retry-After": "1" })]);
  await assert.rejects(client.ledgerRecord("transaction", "-1.00", "EUR"), ServiceUnavailable);
  assert.equal(seen.length, 1);
});

test("a Retry-After longer than maxWaitMs is thrown at once, with it", async () => {
  const { client, slept } = scripted([error(429, "import_busy", { "Retry-After": "600" })]);
  await assert.rejects(client.search("x"), (e) => e instanceof RateLimited && e.code === "import_busy" && e.retryAfter === 600);
  assert.deepEqual(slept, []);
});

test("each error code is its own class, a kind of its status", async () => {
  for (const [status, code, cls] of [[400, "guard_rejected", GuardRejected], [403, "limit_exceeded", LimitExceeded], [403, "from_the_future", errors.Forbidden], [418, "teapot", errors.MMWError]]) {
    const { client } = scripted([error(status, code)]);
    await assert.rejects(client.getMemory("m"), (e) => e.constructor === cls && e.status === status && e.code === code && e.message === "the server's words");
  }
  assert.ok(new GuardRejected("x") instanceof errors.BadRequest);
});

test("batch records each get a key, kept across retries", async () => {
  const { client, seen } = scripted([new Response("", { status: 502 }), json(200, { results: [] })]);
  await client.rememberBatch([{ content: "a" }, { content: "b", idempotency_key: "mine" }]);
  const [first, second] = seen.map((s) => JSON.parse(s.init.body).records);
  assert.deepEqual(first, second);
  assert.equal(first[1].idempotency_key, "mine");
  assert.notEqual(first[0].idempotency_key, undefined);
});
