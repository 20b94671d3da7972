/**
 * The error family: one class per code MMW's REST API answers (`{"error": {code, message}}`),
 * each a kind of its HTTP status's class. `errorFor` picks the class of the code, else of the
 * status, else `MMWError`. `TransportError` is the one error that is not an answer: no connection,
 * a timeout, or a connection dropped before the answer arrived.
 */
export declare class MMWError extends Error {
    static readonly status: number;
    static readonly code: string;
    readonly status: number;
    readonly code: string;
    /** Seconds the server asked to wait (`Retry-After`), when it said. */
    readonly retryAfter: number | undefined;
    constructor(message: string, options?: {
        status?: number;
        code?: string;
        retryAfter?: number;
    });
}
/** No answer: the connection failed, timed out, or was dropped before the answer was read. */
export declare class TransportError extends MMWError {
    static readonly code: string;
}
export declare class BadRequest extends MMWError {
    static readonly status: number;
    static readonly code: string;
}
export declare class NotAuthenticated extends MMWError {
    static readonly status: number;
    static readonly code: string;
}
/** 402: no subscription, a grace period (read-only) or a suspended account. */
export declare class BillingNotice extends MMWError {
    static readonly status: number;
    static readonly code: string;
}
export declare class Forbidden extends MMWError {
    static readonly status: number;
    static readonly code: string;
}
export declare class NotFound extends MMWError {
    static readonly status: number;
    static readonly code: string;
}
export declare class MethodNotAllowed extends MMWError {
    static readonly status: number;
    static readonly code: string;
}
/** 409: an idempotency key reused with other input, `expected_version` not the newest, ... */
export declare class Conflict extends MMWError {
    static readonly status: number;
    static readonly code: string;
}
export declare class PayloadTooLarge extends MMWError {
    static readonly status: number;
    static readonly code: string;
}
export declare class UnsupportedMediaType extends MMWError {
    static readonly status: number;
    static readonly code: string;
}
/** 429: `retryAfter` says when to try again (the client already retried within its budget). */
export declare class RateLimited extends MMWError {
    static readonly status: number;
    static readonly code: string;
}
export declare class InternalError extends MMWError {
    static readonly status: number;
    static readonly code: string;
}
/** 503: the database is unreachable or the server is overloaded. */
export declare class ServiceUnavailable extends MMWError {
    static readonly status: number;
    static readonly code: string;
}
export declare class InvalidInput extends BadRequest {
    static readonly code: string;
}
export declare class InvalidCharacters extends BadRequest {
    static readonly code: string;
}
export declare class InvalidName extends BadRequest {
    static readonly code: string;
}
export declare class ParseError extends BadRequest {
    static readonly code: string;
}
/** `Memory rejected by Security Guard: <reason>`. */
export declare class GuardRejected extends BadRequest {
    static readonly code: string;
}
export declare class LimitExceeded extends Forbidden {
    static readonly code: string;
}
export declare class PlanFeature extends Forbidden {
    static readonly code: string;
}
export declare class WorkspaceDeleted extends Conflict {
    static readonly code: string;
}
export declare class ImportTooSlow extends PayloadTooLarge {
    static readonly code: string;
}
export declare class ImportBusy extends RateLimited {
    static readonly code: string;
}
/** A batch record the database refused although its checks passed: send that record again. */
export declare class WriteFailed extends InternalError {
    static readonly code: string;
}
/** The exception for an error answer: by its code, else by its status. */
export declare function errorFor(status: number, body: unknown, retryAfter?: number): MMWError;
/** The error of one result of a batch (`{"error": {...}}`), as its class; undefined for a success. */
export declare function itemError(result: unknown): MMWError | undefined;
