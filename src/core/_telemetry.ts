// OpenTelemetry spans around the stores' public methods. With no tracer provider registered
// (Deno without OTEL_DENO=true), @opentelemetry/api hands out no-op spans: next to nothing.
import {
  type Attributes,
  INVALID_SPAN_CONTEXT,
  ProxyTracerProvider,
  type Span,
  SpanStatusCode,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import { CommitOutcomeUnknown, StoreConflict } from "./errors.ts";

const tracer: Tracer = trace.getTracer("@harel/dynamodb");

/** Span attribute names. */
export const ATTR = {
  executionId: "harel.execution_id",
  outcome: "harel.commit.outcome",
  retries: "harel.commit.retries",
  delivered: "harel.relay.delivered",
  failed: "harel.relay.failed",
  setAside: "harel.relay.set_aside",
  held: "harel.relay.held",
  lag: "harel.relay.lag_seconds",
} as const;

let enabled = true;

/** The span a call runs in when nothing records spans. */
const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Whether a tracer provider is registered: without one, a span still costs a context switch. */
function tracing(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NO_PROVIDER;
}

/** The provider a ProxyTracerProvider delegates to while none is registered. */
const NO_PROVIDER = new ProxyTracerProvider().getDelegate();

/** Turns the spans off (and on again): for measuring what they cost. */
export function setSpansEnabled(on: boolean): void {
  enabled = on;
}

/** Runs `fn` in an active span named `name`, which records an error and ends when `fn` settles. */
export function withSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => T,
): T {
  if (!enabled || !tracing()) return fn(NO_SPAN);
  return tracer.startActiveSpan(name, { attributes }, (span) => {
    let result: T;
    try {
      result = fn(span);
    } catch (error) {
      fail(span, error);
      span.end();
      throw error;
    }
    if (!(result instanceof Promise)) {
      span.end();
      return result;
    }
    return result.then(
      (value) => {
        span.end();
        return value;
      },
      (error) => {
        fail(span, error);
        span.end();
        throw error;
      },
    ) as T;
  });
}

function fail(span: Span, error: unknown): void {
  if (error instanceof StoreConflict) span.setAttribute(ATTR.outcome, "conflict");
  else if (error instanceof CommitOutcomeUnknown) span.setAttribute(ATTR.outcome, "unknown");
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  });
}

/** Called by a commit before each send of its transaction: sends after the first are retries. */
export function countCommitSend(): void {
  const span = trace.getActiveSpan();
  if (span === undefined || !span.isRecording()) return;
  const sends = (sendCounts.get(span) ?? 0) + 1;
  sendCounts.set(span, sends);
  span.setAttribute(ATTR.retries, sends - 1);
}
const sendCounts = new WeakMap<Span, number>();

/**
 * Wraps every public method of `cls`, static ones included, in a span `{Class}.{method}`. With
 * `executionIds`, a first argument that is a string (or has a string `id`) is the execution id.
 */
// deno-lint-ignore no-explicit-any
export function instrument(cls: abstract new (...args: any[]) => unknown, options: {
  executionIds?: boolean;
  /** The spans' prefix. @default {cls.name} */
  name?: string;
} = {}): void {
  const className = options.name ?? cls.name;
  const wrap = (target: object, name: string) => {
    const original = Object.getOwnPropertyDescriptor(target, name)?.value;
    if (typeof original !== "function") return; // getters and fields stay as they are
    const label = `${className}.${name}`;
    const wrapped = function (this: unknown, ...args: unknown[]) {
      if (!enabled || !tracing()) return original.apply(this, args); // nothing records spans
      const attributes: Attributes = {};
      if (options.executionIds) {
        const id = executionIdOf(args[0]);
        if (id !== undefined) attributes[ATTR.executionId] = id;
      }
      return withSpan(label, attributes, (span) => {
        const result = original.apply(this, args);
        if (name !== "commit" || !(result instanceof Promise)) return result;
        return result.then((value) => {
          span.setAttribute(ATTR.outcome, "committed");
          return value;
        });
      });
    };
    Object.defineProperty(wrapped, "name", { value: name });
    Object.defineProperty(target, name, {
      value: wrapped,
      writable: true,
      configurable: true,
      enumerable: false,
    });
  };
  for (const name of Object.getOwnPropertyNames(cls.prototype)) {
    if (name !== "constructor" && name !== "now") wrap(cls.prototype, name);
  }
  for (const name of Object.getOwnPropertyNames(cls)) {
    if (!["length", "name", "prototype"].includes(name)) wrap(cls, name);
  }
}

function executionIdOf(arg: unknown): string | undefined {
  if (typeof arg === "string") return arg;
  if (typeof arg === "object" && arg !== null && typeof (arg as { id?: unknown }).id === "string") {
    return (arg as { id: string }).id;
  }
  return undefined;
}
