// What answered at an endpoint when it was not DynamoDB, read off the SDK's parse error (no SDK
// import: the errors, and so @harel/dynamodb/testing, use it).

/** The parts of an HTTP answer that tell what answered, read off the SDK's error. */
export interface Answer {
  /** The HTTP status. */
  status: number;
  /** The `content-type` header, or null. */
  contentType: string | null;
  /** The `server` header, or null. */
  server: string | null;
  /** The start of the body, when the parse error quoted it. */
  body: string | null;
}

/**
 * The answer behind an SDK error that could not read it as DynamoDB's (an HTML page, a
 * proxy's error page), or null when the error is something else.
 */
export function foreignAnswer(error: unknown): Answer | null {
  if (!(error instanceof Error)) return null;
  const response = (error as { $response?: unknown }).$response as
    | { statusCode?: unknown; headers?: Record<string, unknown> }
    | undefined;
  // The SDK's JSON parser failed on the body: "Unexpected token '<', "<html>..." ...".
  const unreadable = error.name === "SyntaxError" || /Deserialization error/.test(error.message);
  if (!unreadable || typeof response?.statusCode !== "number") return null;
  const header = (name: string) => {
    const value = response.headers?.[name];
    return typeof value === "string" && value !== "" ? value : null;
  };
  const body = error.message.match(/"([\s\S]*?)"(?:\.\.\.)? is not valid JSON/)?.[1] ?? null;
  return {
    status: response.statusCode,
    contentType: header("content-type"),
    server: header("server"),
    body,
  };
}

/** The answer in a few words: `HTTP 200 text/html from "nginx" starting "<html>"`. */
export function describeAnswer(answer: Answer): string {
  return `HTTP ${answer.status} ${answer.contentType ?? "(no content-type)"}${
    answer.server ? ` from ${JSON.stringify(answer.server)}` : ""
  }${answer.body ? ` starting ${JSON.stringify(answer.body)}` : ""}`;
}
