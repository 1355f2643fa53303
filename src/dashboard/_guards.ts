// What guards every request: the security headers, the same-origin check and CSRF tokens of a
// POST, and the host names the dashboard answers to (docs/dashboard.md, "Security").
import { describe } from "../core/_validate.ts";
import { stylesheetHash } from "./_style.ts";

/** The headers of every response (pages, redirects, refusals). */
export async function securityHeaders(): Promise<Record<string, string>> {
  return {
    "content-security-policy": [
      "default-src 'none'",
      `style-src ${await stylesheetHash()}`,
      "form-action 'self'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ].join("; "),
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
  };
}

/**
 * Whether a POST comes from the dashboard's own origin, as the browser says: `Sec-Fetch-Site`
 * or `Origin` present, and each, when sent, `same-origin` or `origin`. Scripts set neither.
 */
export function fromSameOrigin(request: Request, origin: string): boolean {
  const site = request.headers.get("sec-fetch-site");
  const from = request.headers.get("origin");
  if (site === null && from === null) return false;
  if (site !== null && site !== "same-origin") return false;
  return from === null || from === origin;
}

// Per-session CSRF tokens: an HMAC of the session cookie's random id under the dashboard's key.
export const SESSION_COOKIE = "harel_dashboard_session";

/** 32 random bytes, base64url without padding. */
const ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** Signs and checks the tokens of one dashboard. */
export class CsrfTokens {
  readonly #key: Promise<CryptoKey>;

  /** A key from `secret` (the same on every isolate), or a random one for this dashboard alone. */
  constructor(secret?: string) {
    const bytes = secret === undefined
      ? crypto.getRandomValues(new Uint8Array(32))
      : new TextEncoder().encode(secret);
    this.#key = crypto.subtle.importKey("raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
      "verify",
    ]);
  }

  /** The token of a session. */
  async tokenFor(session: string): Promise<string> {
    const mac = await crypto.subtle.sign("HMAC", await this.#key, message(session));
    return new Uint8Array(mac).toBase64({ alphabet: "base64url", omitPadding: true });
  }

  /** Whether `token` is the token of `session` (compared in constant time by Web Crypto). */
  async verify(session: string, token: string): Promise<boolean> {
    if (!ID_PATTERN.test(token)) return false;
    const mac = Uint8Array.fromBase64(token, { alphabet: "base64url" });
    return await crypto.subtle.verify("HMAC", await this.#key, mac, message(session));
  }
}

function message(session: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(`harel-dashboard csrf v1\n${session}`);
}

export function newSession(): string {
  return crypto.getRandomValues(new Uint8Array(32)).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
}

/** The session id in the request's cookie, or null: none, malformed, or two (one may be planted). */
export function sessionOf(request: Request): string | null {
  const found: string[] = [];
  for (const pair of (request.headers.get("cookie") ?? "").split(";")) {
    const at = pair.indexOf("=");
    if (at !== -1 && pair.slice(0, at).trim() === SESSION_COOKIE) {
      found.push(pair.slice(at + 1).trim());
    }
  }
  return found.length === 1 && ID_PATTERN.test(found[0]!) ? found[0]! : null;
}

/** The `Set-Cookie` value of a new session: HttpOnly, SameSite=Strict, Secure over HTTPS. */
export function sessionCookie(session: string, path: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${session}; Path=${path}; HttpOnly; SameSite=Strict${
    secure ? "; Secure" : ""
  }`;
}

// The `Host` header, which a page script cannot set, gives DNS rebinding away.
/** The names a dashboard answers to without a `hosts` option: the loopback ones, any port. */
export const LOOPBACK_HOSTS: readonly string[] = ["localhost", "127.0.0.1", "[::1]"];

/** One allowed host: a name (or, with `wildcard`, the names below it) and an optional port. */
export interface HostRule {
  /** Lowercase, IPv6 in brackets; with `wildcard` the suffix after `*.`, e.g. `example.com`. */
  name: string;
  /** Whether it stands for every name ending in `.{name}` (`*.example.com`), not itself. */
  wildcard: boolean;
  /** The one port taken, or null: any port. */
  port: string | null;
}

/** A host as `Host` carries it: a name (IPv6 in brackets) and an optional port. */
const HOST =
  /^(\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)(?::([0-9]{1,5}))?$/;

/** `hosts` checked (a TypeError naming the entry that is not a host), with `origin`'s host. */
export function checkHosts(hosts: unknown, origin: string | null): HostRule[] {
  if (hosts !== undefined && (!Array.isArray(hosts) || hosts.length === 0)) {
    throw new TypeError(
      `hosts must be a non-empty array of host names like ["ops.example.com", "ops.internal:8443", ` +
        `"*.ops.example.com"], got ${describe(hosts)}`,
    );
  }
  const rules = ((hosts as unknown[] | undefined) ?? LOOPBACK_HOSTS).map((entry, i) => {
    const rule = typeof entry === "string" ? ruleOf(entry) : null;
    if (rule === null) {
      throw new TypeError(
        `hosts[${i}] must be a host name, optionally with a port or a leading "*." ` +
          `("ops.example.com", "127.0.0.1:8000", "[::1]", "*.example.com"), got ${describe(entry)}`,
      );
    }
    return rule;
  });
  if (origin !== null) {
    const url = new URL(origin);
    rules.push({
      name: url.hostname,
      wildcard: false,
      port: url.port || defaultPort(url.protocol),
    });
  }
  return rules;
}

/** An entry of `hosts` as a rule, or null when it is not one. */
function ruleOf(entry: string): HostRule | null {
  const lower = entry.toLowerCase();
  const wildcard = lower.startsWith("*.");
  const match = (wildcard ? lower.slice(2) : lower).match(HOST);
  if (match === null || (wildcard && match[1]!.startsWith("["))) return null;
  const port = match[2] ?? null;
  if (port !== null && Number(port) > 65535) return null;
  return { name: match[1]!, wildcard, port };
}

/** Whether a request's `Host` (else its URL's host) is one a rule names, at its port if any. */
export function toOwnHost(request: Request, rules: readonly HostRule[]): boolean {
  const url = new URL(request.url);
  const header = request.headers.get("host");
  const match = (header ?? url.host).toLowerCase().match(HOST);
  if (match === null) return false;
  const name = match[1]!;
  const port = match[2] ?? defaultPort(url.protocol);
  return rules.some((rule) =>
    (rule.wildcard ? name.endsWith(`.${rule.name}`) : name === rule.name) &&
    (rule.port === null || rule.port === port)
  );
}

function defaultPort(protocol: string): string {
  return protocol === "https:" ? "443" : "80";
}
