/**
 * The error family: one class per code MMW's REST API answers (`{"error": {code, message}}`),
 * each a kind of its HTTP status's class. `errorFor` picks the class of the code, else of the
 * status, else `MMWError`. `TransportError` is the one error that is not an answer: no connection,
 * a timeout, or a connection dropped before the answer arrived.
 */
export class MMWError extends Error {
    static status = 0;
    static code = "error";
    status;
    code;
    /** Seconds the server asked to wait (`Retry-After`), when it said. */
    retryAfter;
    constructor(message, options = {}) {
        super(message);
        const own = this.constructor;
        this.name = own.name;
        this.status = options.status ?? own.status;
        this.code = options.code ?? own.code;
        this.retryAfter = options.retryAfter;
    }
}
/** No answer: the connection failed, timed out, or was dropped before the answer was read. */
export class TransportError extends MMWError {
    static code = "transport_error";
}
export class BadRequest extends MMWError {
    static status = 400;
    static code = "bad_request";
}
export class NotAuthenticated extends MMWError {
    static status = 401;
    static code = "not_authenticated";
}
/** 402: no subscription, a grace period (read-only) or a suspended account. */
export class BillingNotice extends MMWError {
    static status = 402;
    static code = "billing_notice";
}
export class Forbidden extends MMWError {
    static status = 403;
    static code = "forbidden";
}
export class NotFound extends MMWError {
    static status = 404;
    static code = "not_found";
}
export class MethodNotAllowed extends MMWError {
    static status = 405;
    static code = "method_not_allowed";
}
/** 409: an idempotency key reused with other input, `expected_version` not the newest, ... */
export class Conflict extends MMWError {
    static status = 409;
    static code = "conflict";
}
export class PayloadTooLarge extends MMWError {
    static status = 413;
    static code = "payload_too_large";
}
export class UnsupportedMediaType extends MMWError {
    static status = 415;
    static code = "unsupported_media_type";
}
/** 429: `retryAfter` says when to try again (the client already retried within its budget). */
export class RateLimited extends MMWError {
    static status = 429;
    static code = "rate_limited";
}
export class InternalError extends MMWError {
    static status = 500;
    static code = "internal_error";
}
/** 503: the database is unreachable or the server is overloaded. */
export class ServiceUnavailable extends MMWError {
    static status = 503;
    static code = "service_unavailable";
}
export class InvalidInput extends BadRequest {
    static code = "invalid_input";
}
export class InvalidCharacters extends BadRequest {
    static code = "invalid_characters";
}
export class InvalidName extends BadRequest {
    static code = "invalid_name";
}
export class ParseError extends BadRequest {
    static code = "parse_error";
}
/** `Memory rejected by Security Guard: <reason>`. */
export class GuardRejected extends BadRequest {
    static code = "guard_rejected";
}
export class LimitExceeded extends Forbidden {
    static code = "limit_exceeded";
}
export class PlanFeature extends Forbidden {
    static code = "plan_feature";
}
export class WorkspaceDeleted extends Conflict {
    static code = "workspace_deleted";
}
export class ImportTooSlow extends PayloadTooLarge {
    static code = "import_too_slow";
}
export class ImportBusy extends RateLimited {
    static code = "import_busy";
}
/** A batch record the database refused although its checks passed: send that record again. */
export class WriteFailed extends InternalError {
    static code = "write_failed";
}
const BY_STATUS = [
    BadRequest,
    NotAuthenticated,
    BillingNotice,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    Conflict,
    PayloadTooLarge,
    UnsupportedMediaType,
    RateLimited,
    InternalError,
    ServiceUnavailable,
];
const BY_CODE = [
    ...BY_STATUS,
    InvalidInput,
    InvalidCharacters,
    InvalidName,
    ParseError,
    GuardRejected,
    LimitExceeded,
    PlanFeature,
    WorkspaceDeleted,
    ImportTooSlow,
    ImportBusy,
    WriteFailed,
];
/** The exception for an error answer: by its code, else by its status. */
export function errorFor(status, body, retryAfter) {
    const error = isRecord(body) && isRecord(body["error"]) ? body["error"] : undefined;
    const code = typeof error?.["code"] === "string" ? error["code"] : undefined;
    const message = typeof error?.["message"] === "string" ? error["message"] : `HTTP ${status}`;
    let cls = BY_CODE.find((c) => c.code === code);
    if (cls === undefined || cls.status !== status) {
        cls = BY_STATUS.find((c) => c.status === status) ?? MMWError;
    }
    const options = { status };
    if (code !== undefined)
        options.code = code;
    if (retryAfter !== undefined)
        options.retryAfter = retryAfter;
    return new cls(message, options);
}
/** The error of one result of a batch (`{"error": {...}}`), as its class; undefined for a success. */
export function itemError(result) {
    if (!isRecord(result) || !isRecord(result["error"]))
        return undefined;
    const code = result["error"]["code"];
    const cls = BY_CODE.find((c) => c.code === code) ?? BadRequest;
    return errorFor(cls.status, result);
}
function isRecord(value) {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}
