// The rules every response and every POST go through: the security headers, and the
// same-origin check a POST must pass besides its CSRF token.
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
