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
export * from "./errors.js";
export * as errors from "./errors.js";
export type { components, operations, paths } from "./schema.js";
type Schemas = components["schemas"];
type JsonBody<K extends keyof operations> = NonNullable<operations[K]["requestBody"]> extends {
    content: {
        "application/json": infer B;
    };
} ? B : never;
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
export type RememberParams = Omit<JsonBody<"remember">, "content"> & {
    idempotencyKey?: string;
};
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
    progress: {
        lines: number;
        bytes: number;
    };
    report: Record<string, unknown> | null;
    error: {
        code: string;
        message: string;
        report?: unknown;
    } | null;
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
/** A fresh key for one logical write (reused on each of its retries). */
export declare function newIdempotencyKey(): string;
/** One result of `rememberBatch`: the record's answer, or its error thrown (as its class). */
export declare function stored(result: BatchAnswer["results"][number]): RememberAnswer;
export declare class MMWClient {
    readonly baseUrl: string;
    private readonly apiKey;
    private readonly timeoutMs;
    private readonly retries;
    private readonly fetch;
    private readonly sleep;
    constructor(options?: ClientOptions);
    /** Send `call`, retrying as the rule allows; its value, or its error thrown. */
    send<T>(call: Call): Promise<T>;
    private pause;
    private outcome;
    /** Store one record. An idempotency key is generated unless you pass `idempotencyKey`; every
     * retry sends the same, so a retry never stores it twice. */
    remember(content: string, params?: RememberParams): Promise<RememberAnswer>;
    /** Up to 500 records; each record without an `idempotency_key` is given one, kept for every
     * retry of the call. One result per record, in order (`stored()` reads one). */
    rememberBatch(records: BatchRecord[]): Promise<BatchAnswer>;
    getMemory(memoryId: string): Promise<MemoryAnswer>;
    search(query: string, params?: SearchParams): Promise<SearchAnswer>;
    /** Forget one record by `memory_id`, or every record of `source_id` you can read. */
    forget(params: ForgetParams): Promise<ForgetAnswer>;
    /** `DELETE /api/v1/memories/<id>`: in any workspace unless `workspace` names one. */
    forgetById(memoryId: string, workspace?: string): Promise<ForgetAnswer>;
    validate(sourceId: string, currentSourceHash: string, params?: ValidateParams): Promise<ValidateAnswer>;
    history(memoryId: string): Promise<HistoryAnswer>;
    historyByFactKey(factKey: string, workspace?: string): Promise<HistoryAnswer>;
    /** `recall_context`: a token-bounded context pack for `task`. */
    recall(task: string, params?: RecallParams): Promise<RecallAnswer>;
    workspaces(): Promise<WorkspaceList>;
    upsertSession(client: string, sessionId: string, fields?: SessionFields): Promise<SessionAnswer>;
    /** Turns are idempotent by position: a retry answers `unchanged` for the ones stored. */
    addTurns(client: string, sessionId: string, turns: TurnInput[]): Promise<TurnsAnswer>;
    listSessions(params?: ListSessionsParams): Promise<SessionList>;
    /** Every session you can read, newest first, a page at a time. */
    iterSessions(params?: {
        client?: string;
        pageSize?: number;
    }): AsyncGenerator<Session>;
    getSession(client: string, sessionId: string, params?: GetSessionParams): Promise<SessionRead>;
    /** Every turn of a session, in order, a page at a time (`next_after`). */
    iterTurns(client: string, sessionId: string, pageSize?: number): AsyncGenerator<Turn>;
    forgetSession(client: string, sessionId: string): Promise<SessionForgetAnswer>;
    searchSessions(query: string, params?: SessionSearchParams): Promise<SessionSearchAnswer>;
    /** Append one entry. Give a `reference` (an invoice or payment id) to make it safe to retry
     * after a lost answer: without one the server cannot tell a retry from a second payment. */
    ledgerRecord(kind: Kind, amount: string, currency: string, params?: LedgerRecordParams): Promise<LedgerRecorded>;
    ledgerList(params?: LedgerListParams): Promise<LedgerListed>;
    /** Every entry you may read, newest first, a page at a time (`next_offset`). */
    iterLedgerEntries(filters?: LedgerFilters, pageSize?: number): AsyncGenerator<Entry>;
    ledgerBalance(params?: LedgerBalanceParams): Promise<LedgerBalances>;
    /** An entry is reversed once: a retry after a lost answer is refused (409), never doubled. */
    ledgerReverse(entryId: string, reason: string): Promise<LedgerRecorded>;
    ledgerUpcoming(until?: string): Promise<LedgerUpcoming>;
    /** An occurrence is completed once: a retry after a lost answer is refused (409), never doubled. */
    ledgerComplete(entryId: string, params?: LedgerCompleteParams): Promise<LedgerRecorded>;
    /** The key's project (or the account: owners) as a gzipped JSON Lines export. */
    export(scope?: "project" | "account"): Promise<Uint8Array>;
    /** An MMW export into the key's project (owners and admins); importing it again adds nothing. */
    importExport(data: Uint8Array, options?: {
        respondAsync?: boolean;
    }): Promise<ImportAnswer>;
    importJob(jobId: string): Promise<{
        import: ImportJob;
    }>;
    /** Each call writes an audit row: not retried once the request may have reached the server. */
    agentConsent(given: boolean, sources?: string[]): Promise<AgentConsentAnswer>;
    /** What a consent given with this key would cover (account, project, user), to show before asking. */
    agentConsentScope(): Promise<AgentConsentScope>;
    healthz(): Promise<{
        status: string;
        [name: string]: unknown;
    }>;
}
