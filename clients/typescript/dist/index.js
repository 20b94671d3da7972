/**
 * mmw-client: a typed client of MMW's REST API for Node >= 20 (and any runtime with `fetch`).
 * No dependency: requests go through the global `fetch`; the types come from the server's OpenAPI
 * schema (`src/schema.ts`, generated at build time and checked against the served schema).
 *
 * The retry rule — a call is tried again only when that cannot write twice:
 * - 429 (a rate limit: the server did not do the work): always, after `Retry-After` (else
 *   exponential backoff with jitter); a `Retry-After` longer than `maxWaitMs` is thrown at once;
 * - no connection (refused, not resolved: nothing was sent): always;
 * - 503, 502/504, a timeout, a connection dropped after the request was sent (the server may have
 *   done the work: MMW answers 503 to a request past its deadline while it may still commit):
 *   only when the call is retry-safe — a read, or a write the server recognises when it
 *   comes again: `remember` with its `X-Idempotency-Key` and each batch record with its
 *   `idempotency_key` (generated once per call and sent unchanged on every attempt), a session turn
 *   by its position, a ledger entry by its `reference`, a reversal or completion that can happen
 *   once, or an idempotent call (forget, a session's metadata, an import).
 */
import { MMWError, TransportError, errorFor, itemError } from "./errors.js";
export * from "./errors.js";
export * as errors from "./errors.js";
const IDEMPOTENCY_HEADER = "X-Idempotency-Key";
const API = "/api/v1";
const ALWAYS = new Set([429]);
const MAYBE_DONE = new Set([502, 503, 504]);
const UNSENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT", "EHOSTUNREACH"]);
/** A fresh key for one logical write (reused on each of its retries). */
export function newIdempotencyKey() {
    return `mmw-ts-${globalThis.crypto.randomUUID()}`;
}
/** One result of `rememberBatch`: the record's answer, or its error thrown (as its class). */
export function stored(result) {
    const error = itemError(result);
    if (error !== undefined)
        throw error;
    return result;
}
function env(name) {
    const process = globalThis.process;
    return process?.env?.[name];
}
function segment(value) {
    return encodeURIComponent(value);
}
function sessionPath(client, sessionId) {
    return `${API}/sessions/${segment(client)}/${segment(sessionId)}`;
}
/** The given fields without the undefined and null ones (the server applies its defaults). */
function compact(value) {
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null));
}
function retryAfterSeconds(response) {
    const value = response.headers.get("Retry-After");
    if (value === null)
        return undefined;
    const seconds = Number(value);
    if (Number.isFinite(seconds))
        return Math.max(0, seconds);
    const when = Date.parse(value);
    return Number.isNaN(when) ? undefined : Math.max(0, (when - Date.now()) / 1000);
}
function causeCode(error) {
    let seen = error;
    for (let depth = 0; depth < 4 && seen !== undefined && seen !== null; depth++) {
        const code = seen.code;
        if (typeof code === "string")
            return code;
        seen = seen.cause;
    }
    return undefined;
}
export class MMWClient {
    baseUrl;
    apiKey;
    timeoutMs;
    retries;
    fetch;
    sleep;
    constructor(options = {}) {
        this.baseUrl = (options.baseUrl ?? env("MMW_URL") ?? "http://127.0.0.1:8000").replace(/\/+$/, "");
        const key = options.apiKey ?? env("MMW_API_KEY");
        if (!key)
            throw new Error("an API key is needed: pass apiKey or set MMW_API_KEY");
        this.apiKey = key;
        this.timeoutMs = options.timeoutMs ?? 30_000;
        this.retries = { attempts: 4, backoffMs: 500, maxBackoffMs: 8_000, maxWaitMs: 60_000, ...compact(options.retries ?? {}) };
        this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
        this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    }
    /** Send `call`, retrying as the rule allows; its value, or its error thrown. */
    async send(call) {
        const url = new URL(this.baseUrl + call.path);
        for (const [name, value] of Object.entries(call.query ?? {})) {
            if (value !== undefined && value !== null)
                url.searchParams.set(name, String(value));
        }
        const headers = {
            Authorization: `Bearer ${this.apiKey}`,
            Accept: "application/json",
            "User-Agent": "mmw-client-typescript/0.1.0",
            ...(call.headers ?? {}),
        };
        let body = call.body;
        if (call.json !== undefined) {
            headers["Content-Type"] = "application/json";
            body = JSON.stringify(call.json);
        }
        const safe = call.retrySafe ?? true;
        for (let attempt = 1;; attempt++) {
            let response;
            try {
                response = await this.fetch(url, {
                    method: call.method,
                    headers,
                    body: body,
                    signal: AbortSignal.timeout(this.timeoutMs),
                });
            }
            catch (error) {
                const unsent = UNSENT.has(causeCode(error) ?? "");
                const pause = unsent || safe ? this.pause(attempt, undefined) : undefined;
                if (pause === undefined) {
                    const reason = error?.name === "TimeoutError" ? "timed out" : String(causeCode(error) ?? error?.message ?? error);
                    throw new TransportError(`MMW server at ${this.baseUrl} gave no answer (${reason})`);
                }
                await this.sleep(pause);
                continue;
            }
            const status = response.status;
            if (ALWAYS.has(status) || (MAYBE_DONE.has(status) && safe)) {
                const pause = this.pause(attempt, retryAfterSeconds(response));
                if (pause !== undefined) {
                    await response.body?.cancel();
                    await this.sleep(pause);
                    continue;
                }
            }
            return this.outcome(call, response);
        }
    }
    pause(attempt, retryAfter) {
        const r = this.retries;
        if (attempt >= r.attempts)
            return undefined;
        if (retryAfter !== undefined)
            return retryAfter * 1000 <= r.maxWaitMs ? retryAfter * 1000 : undefined;
        const base = Math.min(r.maxBackoffMs, r.backoffMs * 2 ** (attempt - 1));
        return base * (0.5 + Math.random() / 2);
    }
    async outcome(call, response) {
        if (response.status >= 400) {
            let parsed;
            try {
                parsed = await response.json();
            }
            catch {
                parsed = undefined;
            }
            throw errorFor(response.status, parsed, retryAfterSeconds(response));
        }
        if (call.raw)
            return new Uint8Array(await response.arrayBuffer());
        try {
            return (await response.json());
        }
        catch {
            throw new MMWError(`the server answered ${response.status} without a JSON body`, { status: response.status });
        }
    }
    // --- records ----------------------------------------------------------------------------------
    /** Store one record. An idempotency key is generated unless you pass `idempotencyKey`; every
     * retry sends the same, so a retry never stores it twice. */
    remember(content, params = {}) {
        const { idempotencyKey, ...rest } = params;
        const key = idempotencyKey ?? newIdempotencyKey();
        return this.send({
            method: "POST",
            path: `${API}/memories`,
            json: { ...compact(rest), content },
            headers: { [IDEMPOTENCY_HEADER]: key },
        });
    }
    /** Up to 500 records; each record without an `idempotency_key` is given one, kept for every
     * retry of the call. One result per record, in order (`stored()` reads one). */
    rememberBatch(records) {
        const keyed = records.map((r) => ({ ...compact(r), idempotency_key: r.idempotency_key ?? newIdempotencyKey() }));
        return this.send({ method: "POST", path: `${API}/memories/batch`, json: { records: keyed } });
    }
    getMemory(memoryId) {
        return this.send({ method: "GET", path: `${API}/memories/${segment(memoryId)}` });
    }
    search(query, params = {}) {
        return this.send({ method: "POST", path: `${API}/memories/search`, json: { ...compact(params), query } });
    }
    /** Forget one record by `memory_id`, or every record of `source_id` you can read. */
    forget(params) {
        return this.send({ method: "POST", path: `${API}/memories/forget`, json: compact(params) });
    }
    /** `DELETE /api/v1/memories/<id>`: in any workspace unless `workspace` names one. */
    forgetById(memoryId, workspace) {
        return this.send({ method: "DELETE", path: `${API}/memories/${segment(memoryId)}`, query: { workspace } });
    }
    validate(sourceId, currentSourceHash, params = {}) {
        const json = { ...compact(params), source_id: sourceId, current_source_hash: currentSourceHash };
        return this.send({ method: "POST", path: `${API}/memories/validate`, json });
    }
    history(memoryId) {
        return this.send({ method: "GET", path: `${API}/memories/${segment(memoryId)}/history` });
    }
    historyByFactKey(factKey, workspace) {
        return this.send({ method: "GET", path: `${API}/memories/history`, query: { fact_key: factKey, workspace } });
    }
    /** `recall_context`: a token-bounded context pack for `task`. */
    recall(task, params = {}) {
        return this.send({ method: "POST", path: `${API}/recall-context`, json: { ...compact(params), task } });
    }
    workspaces() {
        return this.send({ method: "GET", path: `${API}/workspaces` });
    }
    // --- sessions -----------------------------------------------------------------------------------
    upsertSession(client, sessionId, fields = {}) {
        return this.send({ method: "PUT", path: sessionPath(client, sessionId), json: compact(fields) });
    }
    /** Turns are idempotent by position: a retry answers `unchanged` for the ones stored. */
    addTurns(client, sessionId, turns) {
        return this.send({ method: "POST", path: `${sessionPath(client, sessionId)}/turns`, json: { turns } });
    }
    listSessions(params = {}) {
        return this.send({ method: "GET", path: `${API}/sessions`, query: params });
    }
    /** Every session you can read, newest first, a page at a time. */
    async *iterSessions(params = {}) {
        let offset = 0;
        for (;;) {
            const page = await this.listSessions({ client: params.client, limit: params.pageSize ?? 100, offset });
            yield* page.sessions;
            offset += page.sessions.length;
            if (page.sessions.length === 0 || offset >= page.total)
                return;
        }
    }
    getSession(client, sessionId, params = {}) {
        return this.send({ method: "GET", path: sessionPath(client, sessionId), query: params });
    }
    /** Every turn of a session, in order, a page at a time (`next_after`). */
    async *iterTurns(client, sessionId, pageSize = 500) {
        let after;
        for (;;) {
            const page = await this.getSession(client, sessionId, { after, limit: pageSize });
            yield* page.turns;
            if (page.next_after === null || page.next_after === undefined)
                return;
            after = page.next_after;
        }
    }
    forgetSession(client, sessionId) {
        return this.send({ method: "DELETE", path: sessionPath(client, sessionId) });
    }
    searchSessions(query, params = {}) {
        return this.send({ method: "POST", path: `${API}/sessions/search`, json: { ...compact(params), query } });
    }
    // --- ledger -------------------------------------------------------------------------------------
    /** Append one entry. Give a `reference` (an invoice or payment id) to make it safe to retry
     * after a lost answer: without one the server cannot tell a retry from a second payment. */
    ledgerRecord(kind, amount, currency, params = {}) {
        const json = { ...compact(params), kind, amount, currency };
        return this.send({ method: "POST", path: `${API}/ledger/entries`, json, retrySafe: !!params.reference });
    }
    ledgerList(params = {}) {
        return this.send({ method: "POST", path: `${API}/ledger/list`, json: compact(params) });
    }
    /** Every entry you may read, newest first, a page at a time (`next_offset`). */
    async *iterLedgerEntries(filters = {}, pageSize = 100) {
        let offset = 0;
        while (offset !== null) {
            const page = await this.ledgerList({ ...filters, limit: pageSize, offset });
            yield* page.entries;
            offset = page.next_offset ?? null;
        }
    }
    ledgerBalance(params = {}) {
        return this.send({ method: "POST", path: `${API}/ledger/balance`, json: compact(params) });
    }
    /** An entry is reversed once: a retry after a lost answer is refused (409), never doubled. */
    ledgerReverse(entryId, reason) {
        return this.send({ method: "POST", path: `${API}/ledger/reverse`, json: { entry_id: entryId, reason } });
    }
    ledgerUpcoming(until) {
        return this.send({ method: "POST", path: `${API}/ledger/upcoming`, json: compact({ until }) });
    }
    /** An occurrence is completed once: a retry after a lost answer is refused (409), never doubled. */
    ledgerComplete(entryId, params = {}) {
        return this.send({ method: "POST", path: `${API}/ledger/complete`, json: { ...compact(params), entry_id: entryId } });
    }
    // --- data rights, consent, health ----------------------------------------------------------------
    /** The key's project (or the account: owners) as a gzipped JSON Lines export. */
    export(scope = "project") {
        return this.send({ method: "GET", path: `${API}/export`, query: { scope: scope === "project" ? undefined : scope }, raw: true });
    }
    /** An MMW export into the key's project (owners and admins); importing it again adds nothing. */
    importExport(data, options = {}) {
        const gzip = data[0] === 0x1f && data[1] === 0x8b;
        const headers = { "Content-Type": gzip ? "application/gzip" : "application/octet-stream" };
        if (options.respondAsync)
            headers["Prefer"] = "respond-async";
        return this.send({ method: "POST", path: `${API}/import`, body: data, headers });
    }
    importJob(jobId) {
        return this.send({ method: "GET", path: `${API}/import/${segment(jobId)}` });
    }
    /** Each call writes an audit row: not retried once the request may have reached the server. */
    agentConsent(given, sources) {
        return this.send({ method: "POST", path: `${API}/agent/consent`, json: compact({ given, sources }), retrySafe: false });
    }
    /** What a consent given with this key would cover (account, project, user), to show before asking. */
    agentConsentScope() {
        return this.send({ method: "GET", path: `${API}/agent/consent` });
    }
    healthz() {
        return this.send({ method: "GET", path: "/healthz" });
    }
}
