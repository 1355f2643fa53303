// The host names the dashboard answers to: the `Host` header, which a page script cannot set,
// gives DNS rebinding away (docs/dashboard.md, "Security").
import { describe } from "../core/_validate.ts";

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
