/**
 * The error family: one class per code MMW's REST API answers (`{"error": {code, message}}`),
 * each a kind of its HTTP status's class. `errorFor` picks the class of the code, else of the
 * status, else `MMWError`. `TransportError` is the one error that is not an answer: no connection,
 * a timeout, or a connection dropped before the answer arrived.
 */

export class MMWError extends Error {
  static readonly status: number = 0;
  static readonly code: string = "error";
  readonly status: number;
  readonly code: string;
  /** Seconds the server asked to wait (`Retry-After`), when it said. */
  readonly retryAfter: number | undefined;

  constructor(message: string, options: { status?: number; code?: string; retryAfter?: number } = {}) {
    super(message);
    const own = this.constructor as typeof MMWError;
    this.name = own.name;
    this.status = options.status ?? own.status;
    this.code = options.code ?? own.code;
    this.retryAfter = options.retryAfter;
  }
}

/** No answer: the connection failed, timed out, or was dropped before the answer was read. */
export class TransportError extends MMWError {
  static override readonly code: string = "transport_error";
}

export class BadRequest extends MMWError {
  static override readonly status: number = 400;
  static override readonly code: string = "bad_request";
}
export class NotAuthenticated extends MMWError {
  static override readonly status: number = 401;
  static override readonly code: string = "not_authenticated";
}
/** 402: no subscription, a grace period (read-only) or a suspended account. */
export class BillingNotice extends MMWError {
  static override readonly status: number = 402;
  static override readonly code: string = "billing_notice";
}
export class Forbidden extends MMWError {
  static override readonly status: number = 403;
  static override readonly code: string = "forbidden";
}
export class NotFound extends MMWError {
  static override readonly status: number = 404;
  static override readonly code: string = "not_found";
}
export class MethodNotAllowed extends MMWError {
  static override readonly status: number = 405;
  static override readonly code: string = "method_not_allowed";
}
/** 409: an idempotency key reused with other input, `expected_version` not the newest, ... */
export class Conflict extends MMWError {
  static override readonly status: number = 409;
  static override readonly code: string = "conflict";
}
export class PayloadTooLarge extends MMWError {
  static override readonly status: number = 413;
  static override readonly code: string = "payload_too_large";
}
export class UnsupportedMediaType extends MMWError {
  static override readonly status: number = 415;
  static override readonly code: string = "unsupported_media_type";
}
/** 429: `retryAfter` says when to try again (the client already retried within its budget). */
export class RateLimited extends MMWError {
  static override readonly status: number = 429;
  static override readonly code: string = "rate_limited";
}
export class InternalError extends MMWError {
  static override readonly status: number = 500;
  static override readonly code: string = "internal_error";
}
/** 503: the database is unreachable or the server is overloaded. */
export class ServiceUnavailable extends MMWError {
  static override readonly status: number = 503;
  static override readonly code: string = "service_unavailable";
}

export class InvalidInput extends BadRequest {
  static override readonly code: string = "invalid_input";
}
export class InvalidCharacters extends BadRequest {
  static override readonly code: string = "invalid_characters";
}
export class InvalidName extends BadRequest {
  static override readonly code: string = "invalid_name";
}
export class ParseError extends BadRequest {
  static override readonly code: string = "parse_error";
}
/** `Memory rejected by Security Guard: <reason>`. */
export class GuardRejected extends BadRequest {
  static override readonly code: string = "guard_rejected";
}
export class LimitExceeded extends Forbidden {
  static override readonly code: string = "limit_exceeded";
}
export class PlanFeature extends Forbidden {
  static override readonly code: string = "plan_feature";
}
export class WorkspaceDeleted extends Conflict {
  static override readonly code: string = "workspace_deleted";
}
export class ImportTooSlow extends PayloadTooLarge {
  static override readonly code: string = "import_too_slow";
}
export class ImportBusy extends RateLimited {
  static override readonly code: string = "import_busy";
}
/** A batch record the database refused although its checks passed: send that record again. */
export class WriteFailed extends InternalError {
  static override readonly code: string = "write_failed";
}

const BY_STATUS: ReadonlyArray<typeof MMWError> = [
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
const BY_CODE: ReadonlyArray<typeof MMWError> = [
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
export function errorFor(status: number, body: unknown, retryAfter?: number): MMWError {
  const error = isRecord(body) && isRecord(body["error"]) ? body["error"] : undefined;
  const code = typeof error?.["code"] === "string" ? error["code"] : undefined;
  const message = typeof error?.["message"] === "string" ? error["message"] : `HTTP ${status}`;
  let cls = BY_CODE.find((c) => c.code === code);
  if (cls === undefined || cls.status !== status) {
    cls = BY_STATUS.find((c) => c.status === status) ?? MMWError;
  }
  const options: { status: number; code?: string; retryAfter?: number } = { status };
  if (code !== undefined) options.code = code;
  if (retryAfter !== undefined) options.retryAfter = retryAfter;
  return new cls(message, options);
}

/** The error of one result of a batch (`{"error": {...}}`), as its class; undefined for a success. */
export function itemError(result: unknown): MMWError | undefined {
  if (!isRecord(result) || !isRecord(result["error"])) return undefined;
  const code = result["error"]["code"];
  const cls = BY_CODE.find((c) => c.code === code) ?? BadRequest;
  return errorFor(cls.status, result);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
