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

import type { components, operations } from "./schema.js";
import { MMWError, TransportError, errorFor, itemError } from "./errors.js";

export * from "./errors.js";
export * as errors from "./errors.js";
export type { components, operations, paths } from "./schema.js";

type Schemas = components["schemas"];
type JsonBody<K extends keyof operations> = NonNullable<operations[K]["requestBody"]> extends {
  content: { "application/json": infer B };
}
  ? B
  : never;
type Query<K extends keyof operations> = NonNullable<operations[K]["parameters"]["query"]>;

export type Author = Schemas["Author"];
export type Memory = Schemas["Memory"];
export type RememberAnswer = Schemas["RememberAnswer"];
export type BatchAnswer = Schemas["BatchAnswer"];
export type MemoryAnswer = Schemas["MemoryAnswer"];
export type SearchAnswer = Schemas["SearchAnswer"];
export type HistoryAnswer = Schemas["HistoryAnswer"];
export type ForgetAnswer = Schemas["ForgetAnswer"];
export type ValidateAnswer = Schemas["ValidateAnswer"];
export type RecallAnswer = Schemas["RecallAnswer"];
export type WorkspaceList = Schemas["WorkspaceList"];
export type AgentConsentAnswer = Schemas["AgentConsentAnswer"];
export type AgentConsentScope = Schemas["AgentConsentScope"];
export type Session = Schemas["Session"];
export type Turn = Schemas["Turn"];
export type SessionAnswer = Schemas["SessionAnswer"];
export type TurnsAnswer = Schemas["TurnsAnswer"];
export type SessionList = Schemas["SessionList"];
export type SessionRead = Schemas["SessionRead"];
export type SessionSearchAnswer = Schemas["SessionSearchAnswer"];
export type SessionForgetAnswer = Schemas["SessionForgetAnswer"];
export type Entry = Schemas["EntryShape"];
export type LedgerRecorded = Schemas["LedgerRecorded"];
export type LedgerListed = Schemas["LedgerListed"];
export type LedgerBalances = Schemas["LedgerBalances"];
export type LedgerUpcoming = Schemas["LedgerUpcoming"];

export type RememberParams = Omit<JsonBody<"remember">, "content"> & { idempotencyKey?: string };
export type BatchRecord = Schemas["BatchRecord"];
export type SearchParams = Omit<JsonBody<"search">, "query">;
export type ValidateParams = Omit<JsonBody<"validate_memory">, "source_id" | "current_source_hash">;
export type ForgetParams = JsonBody<"forget">;
export type RecallParams = Omit<JsonBody<"recall_context">, "task">;
export type SessionFields = JsonBody<"upsert_session">;
export type TurnInput = JsonBody<"add_session_turns">["turns"][number];
export type ListSessionsParams = Query<"list_sessions">;
export type GetSessionParams = Query<"get_session">;
export type SessionSearchParams = Omit<JsonBody<"search_sessions">, "query">;
export type LedgerRecordParams = Omit<JsonBody<"ledger_record">, "kind" | "amount" | "currency">;
export type LedgerListParams = JsonBody<"ledger_list">;
export type LedgerFilters = Omit<LedgerListParams, "limit" | "offset">;
export type LedgerBalanceParams = JsonBody<"ledger_balance">;
export type LedgerCompleteParams = Omit<JsonBody<"ledger_complete">, "entry_id">;
export type Kind = JsonBody<"ledger_record">["kind"];

/** An import's answer (the import routes are not in the OpenAPI schema: docs/reference/export.md). */
export interface ImportJob {
  id: string;
  url: string;
  status: "queued" | "running" | "succeeded" | "failed";
  via: string;
  upload_bytes: number;
  progress: { lines: number; bytes: number };
  report: Record<string, unknown> | null;
  error: { code: string; message: string; report?: unknown } | null;
  created_at: string | null;
  started_at: string | null;
  finished_at: string | null;
}
export interface ImportAnswer {
  imported: boolean;
  import: ImportJob;
  lines?: number;
  created?: Record<string, number>;
  unchanged?: Record<string, number>;
  ignored?: Record<string, number>;
  redacted?: number;
}

export interface RetryOptions {
  /** Tries in all, the first included (default 4). */
  attempts?: number;
  /** The first backoff, doubled each time (default 500 ms), with jitter. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** The longest `Retry-After` waited for (default 60 s); a longer one is raised at once. */
  maxWaitMs?: number;
}

export interface ClientOptions {
  /** Default: `MMW_URL`, else http://127.0.0.1:8000. */
  baseUrl?: string;
  /** Default: `MMW_API_KEY`. */
  apiKey?: string;
  /** Per attempt (default 30 s). */
  timeoutMs?: number;
  retries?: RetryOptions;
  /** Your own `fetch` (tests, proxies). */
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
}

/** One REST call, built once and sent as many times as the retry rule allows: the same headers
 * (an idempotency key among them) on every attempt. */
export interface Call {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | null | undefined>;
  json?: unknown;
  body?: Uint8Array;
  headers?: Record<string, string>;
  /** Whether sending it again after a lost answer cannot write twice (default true). */
  retrySafe?: boolean;
  raw?: boolean;
}

const IDEMPOTENCY_HEADER = "X-Idempotency-Key";
const API = "/api/v1";
const ALWAYS = new Set([429]);
const MAYBE_DONE = new Set([502, 503, 504]);
const UNSENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT", "EHOSTUNREACH"]);

/** A fresh key for one logical write (reused on each of its retries). */
export function newIdempotencyKey(): string {
  return `mmw-ts-${globalThis.crypto.randomUUID()}`;
}

/** One result of `rememberBatch`: the record's answer, or its error thrown (as its class). */
export function stored(result: BatchAnswer["results"][number]): RememberAnswer {
  const error = itemError(result);
  if (error !== undefined) throw error;
  return result as RememberAnswer;
}

function env(name: string): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return process?.env?.[name];
}

function segment(value: string): string {
  return encodeURIComponent(value);
}

function sessionPath(client: string, sessionId: string): string {
  return `${API}/sessions/${segment(client)}/${segment(sessionId)}`;
}

/** The given fields without the undefined and null ones (the server applies its defaults). */
function compact<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
}

function retryAfterSeconds(response: Response): number | undefined {
  const value = response.headers.get("Retry-After");
  if (value === null) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const when = Date.parse(value);
  return Number.isNaN(when) ? undefined : Math.max(0, (when - Date.now()) / 1000);
}

function causeCode(error: unknown): string | undefined {
  let seen: unknown = error;
  for (let depth = 0; depth < 4 && seen !== undefined && seen !== null; depth++) {
    const code = (seen as { code?: unknown }).code;
    if (typeof code === "string") return code;
    seen = (seen as { cause?: unknown }).cause;
  }
  return undefined;
}

export class MMWClient {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly retries: Required<RetryOptions>;
  private readonly fetch: typeof fetch;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? env("MMW_URL") ?? "http://127.0.0.1:8000").replace(/\/+$/, "");
    const key = options.apiKey ?? env("MMW_API_KEY");
    if (!key) throw new Error("an API key is needed: pass apiKey or set MMW_API_KEY");
    this.apiKey = key;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.retries = { attempts: 4, backoffMs: 500, maxBackoffMs: 8_000, maxWaitMs: 60_000, ...compact(options.retries ?? {}) };
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** Send `call`, retrying as the rule allows; its value, or its error thrown. */
  async send<T>(call: Call): Promise<T> {
    const url = new URL(this.baseUrl + call.path);
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.apiKey}`,
      Accept: "application/json",
      "User-Agent": "mmw-client-typescript/0.1.0",
      ...(call.headers ?? {}),
    };
    let body: string | Uint8Array | undefined = call.body;
    if (call.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(call.json);
    }
    const safe = call.retrySafe ?? true;
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await this.fetch(url, {
          method: call.method,
          headers,
          body: body as BodyInit | undefined,
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (error) {
        const unsent = UNSENT.has(causeCode(error) ?? "");
        const pause = unsent || safe ? this.pause(attempt, undefined) : undefined;
        if (pause === undefined) {
          const reason = (error as Error)?.name === "TimeoutError" ? "timed out" : String(causeCode(error) ?? (error as Error)?.message ?? error);
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
      return this.outcome<T>(call, response);
    }
  }

  private pause(attempt: number, retryAfter: number | undefined): number | undefined {
    const r = this.retries;
    if (attempt >= r.attempts) return undefined;
    if (retryAfter !== undefined) return retryAfter * 1000 <= r.maxWaitMs ? retryAfter * 1000 : undefined;
    const base = Math.min(r.maxBackoffMs, r.backoffMs * 2 ** (attempt - 1));
    return base * (0.5 + Math.random() / 2);
  }

  private async outcome<T>(call: Call, response: Response): Promise<T> {
    if (response.status >= 400) {
      let parsed: unknown;
      try {
        parsed = await response.json();
      } catch {
        parsed = undefined;
      }
      throw errorFor(response.status, parsed, retryAfterSeconds(response));
    }
    if (call.raw) return new Uint8Array(await response.arrayBuffer()) as T;
    try {
      return (await response.json()) as T;
    } catch {
      throw new MMWError(`the server answered ${response.status} without a JSON body`, { status: response.status });
    }
  }

  // --- records ----------------------------------------------------------------------------------

  /** Store one record. An idempotency key is generated unless you pass `idempotencyKey`; every
   * retry sends the same, so a retry never stores it twice. */
  remember(content: string, params: RememberParams = {}): Promise<RememberAnswer> {
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
  rememberBatch(records: BatchRecord[]): Promise<BatchAnswer> {
    const keyed = records.map((r) => ({ ...compact(r), idempotency_key: r.idempotency_key ?? newIdempotencyKey() }));
    return this.send({ method: "POST", path: `${API}/memories/batch`, json: { records: keyed } });
  }

  getMemory(memoryId: string): Promise<MemoryAnswer> {
    return this.send({ method: "GET", path: `${API}/memories/${segment(memoryId)}` });
  }

  search(query: string, params: SearchParams = {}): Promise<SearchAnswer> {
    return this.send({ method: "POST", path: `${API}/memories/search`, json: { ...compact(params), query } });
  }

  /** Forget one record by `memory_id`, or every record of `source_id` you can read. */
  forget(params: ForgetParams): Promise<ForgetAnswer> {
    return this.send({ method: "POST", path: `${API}/memories/forget`, json: compact(params) });
  }

  /** `DELETE /api/v1/memories/<id>`: in any workspace unless `workspace` names one. */
  forgetById(memoryId: string, workspace?: string): Promise<ForgetAnswer> {
    return this.send({ method: "DELETE", path: `${API}/memories/${segment(memoryId)}`, query: { workspace } });
  }

  validate(sourceId: string, currentSourceHash: string, params: ValidateParams = {}): Promise<ValidateAnswer> {
    const json = { ...compact(params), source_id: sourceId, current_source_hash: currentSourceHash };
    return this.send({ method: "POST", path: `${API}/memories/validate`, json });
  }

  history(memoryId: string): Promise<HistoryAnswer> {
    return this.send({ method: "GET", path: `${API}/memories/${segment(memoryId)}/history` });
  }

  historyByFactKey(factKey: string, workspace?: string): Promise<HistoryAnswer> {
    return this.send({ method: "GET", path: `${API}/memories/history`, query: { fact_key: factKey, workspace } });
  }

  /** `recall_context`: a token-bounded context pack for `task`. */
  recall(task: string, params: RecallParams = {}): Promise<RecallAnswer> {
    return this.send({ method: "POST", path: `${API}/recall-context`, json: { ...compact(params), task } });
  }

  workspaces(): Promise<WorkspaceList> {
    return this.send({ method: "GET", path: `${API}/workspaces` });
  }

  // --- sessions -----------------------------------------------------------------------------------

  upsertSession(client: string, sessionId: string, fields: SessionFields = {}): Promise<SessionAnswer> {
    return this.send({ method: "PUT", path: sessionPath(client, sessionId), json: compact(fields) });
  }

  /** Turns are idempotent by position: a retry answers `unchanged` for the ones stored. */
  addTurns(client: string, sessionId: string, turns: TurnInput[]): Promise<TurnsAnswer> {
    return this.send({ method: "POST", path: `${sessionPath(client, sessionId)}/turns`, json: { turns } });
  }

  listSessions(params: ListSessionsParams = {}): Promise<SessionList> {
    return this.send({ method: "GET", path: `${API}/sessions`, query: params });
  }

  /** Every session you can read, newest first, a page at a time. */
  async *iterSessions(params: { client?: string; pageSize?: number } = {}): AsyncGenerator<Session> {
    let offset = 0;
    for (;;) {
      const page = await this.listSessions({ client: params.client, limit: params.pageSize ?? 100, offset });
      yield* page.sessions;
      offset += page.sessions.length;
      if (page.sessions.length === 0 || offset >= page.total) return;
    }
  }

  getSession(client: string, sessionId: string, params: GetSessionParams = {}): Promise<SessionRead> {
    return this.send({ method: "GET", path: sessionPath(client, sessionId), query: params });
  }

  /** Every turn of a session, in order, a page at a time (`next_after`). */
  async *iterTurns(client: string, sessionId: string, pageSize = 500): AsyncGenerator<Turn> {
    let after: number | undefined;
    for (;;) {
      const page = await this.getSession(client, sessionId, { after, limit: pageSize });
      yield* page.turns;
      if (page.next_after === null || page.next_after === undefined) return;
      after = page.next_after;
    }
  }

  forgetSession(client: string, sessionId: string): Promise<SessionForgetAnswer> {
    return this.send({ method: "DELETE", path: sessionPath(client, sessionId) });
  }

  searchSessions(query: string, params: SessionSearchParams = {}): Promise<SessionSearchAnswer> {
    return this.send({ method: "POST", path: `${API}/sessions/search`, json: { ...compact(params), query } });
  }

  // --- ledger -------------------------------------------------------------------------------------

  /** Append one entry. Give a `reference` (an invoice or payment id) to make it safe to retry
   * after a lost answer: without one the server cannot tell a retry from a second payment. */
  ledgerRecord(kind: Kind, amount: string, currency: string, params: LedgerRecordParams = {}): Promise<LedgerRecorded> {
    const json = { ...compact(params), kind, amount, currency };
    return this.send({ method: "POST", path: `${API}/ledger/entries`, json, retrySafe: !!params.reference });
  }

  ledgerList(params: LedgerListParams = {}): Promise<LedgerListed> {
    return this.send({ method: "POST", path: `${API}/ledger/list`, json: compact(params) });
  }

  /** Every entry you may read, newest first, a page at a time (`next_offset`). */
  async *iterLedgerEntries(filters: LedgerFilters = {}, pageSize = 100): AsyncGenerator<Entry> {
    let offset: number | null = 0;
    while (offset !== null) {
      const page: LedgerListed = await this.ledgerList({ ...filters, limit: pageSize, offset });
      yield* page.entries;
      offset = page.next_offset ?? null;
    }
  }

  ledgerBalance(params: LedgerBalanceParams = {}): Promise<LedgerBalances> {
    return this.send({ method: "POST", path: `${API}/ledger/balance`, json: compact(params) });
  }

  /** An entry is reversed once: a retry after a lost answer is refused (409), never doubled. */
  ledgerReverse(entryId: string, reason: string): Promise<LedgerRecorded> {
    return this.send({ method: "POST", path: `${API}/ledger/reverse`, json: { entry_id: entryId, reason } });
  }

  ledgerUpcoming(until?: string): Promise<LedgerUpcoming> {
    return this.send({ method: "POST", path: `${API}/ledger/upcoming`, json: compact({ until }) });
  }

  /** An occurrence is completed once: a retry after a lost answer is refused (409), never doubled. */
  ledgerComplete(entryId: string, params: LedgerCompleteParams = {}): Promise<LedgerRecorded> {
    return this.send({ method: "POST", path: `${API}/ledger/complete`, json: { ...compact(params), entry_id: entryId } });
  }

  // --- data rights, consent, health ----------------------------------------------------------------

  /** The key's project (or the account: owners) as a gzipped JSON Lines export. */
  export(scope: "project" | "account" = "project"): Promise<Uint8Array> {
    return this.send({ method: "GET", path: `${API}/export`, query: { scope: scope === "project" ? undefined : scope }, raw: true });
  }

  /** An MMW export into the key's project (owners and admins); importing it again adds nothing. */
  importExport(data: Uint8Array, options: { respondAsync?: boolean } = {}): Promise<ImportAnswer> {
    const gzip = data[0] === 0x1f && data[1] === 0x8b;
    const headers: Record<string, string> = { "Content-Type": gzip ? "application/gzip" : "application/octet-stream" };
    if (options.respondAsync) headers["Prefer"] = "respond-async";
    return this.send({ method: "POST", path: `${API}/import`, body: data, headers });
  }

  importJob(jobId: string): Promise<{ import: ImportJob }> {
    return this.send({ method: "GET", path: `${API}/import/${segment(jobId)}` });
  }

  /** Each call writes an audit row: not retried once the request may have reached the server. */
  agentConsent(given: boolean, sources?: string[]): Promise<AgentConsentAnswer> {
    return this.send({ method: "POST", path: `${API}/agent/consent`, json: compact({ given, sources }), retrySafe: false });
  }

  /** What a consent given with this key would cover (account, project, user), to show before asking. */
  agentConsentScope(): Promise<AgentConsentScope> {
    return this.send({ method: "GET", path: `${API}/agent/consent` });
  }

  healthz(): Promise<{ status: string; [name: string]: unknown }> {
    return this.send({ method: "GET", path: "/healthz" });
  }
}
