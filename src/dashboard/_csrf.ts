// Per-session CSRF tokens: an HMAC of the session cookie's random id under the dashboard's key
// (docs/dashboard.md, "Security").

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

/**
 * The session id the request's cookie holds, or null: none, malformed, or two cookies of the
 * name (one may have been planted by a neighbouring site: trust neither).
 */
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
