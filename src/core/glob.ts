/**
 * Redis-style glob matching for `keys(pattern)`, done by walking the pattern — never by
 * turning user text into a regular expression.
 *
 * @module
 */

/**
 * Whether `text` matches the glob `pattern`: `*` any run, `?` any one character,
 * `[abc]`, `[a-z]`, `[!a]` / `[^a]` one of (not) a set, `\x` a literal `x`. Every other
 * character, regex metacharacters included, matches itself. An unclosed `[` is a literal.
 *
 * @example Matching keys
 * ```ts
 * import assert from "node:assert/strict";
 * import { globMatch } from "@harel/dynamodb";
 *
 * assert.equal(globMatch("session:*", "session:42"), true);
 * assert.equal(globMatch("user.[0-9]", "user.x"), false);
 * ```
 */
export function globMatch(pattern: string, text: string): boolean {
  const p = [...pattern];
  const t = [...text];
  let pi = 0, ti = 0;
  let starP = -1, starT = 0; // where to resume after the last `*`
  while (ti < t.length) {
    if (pi < p.length && p[pi] === "*") {
      starP = ++pi;
      starT = ti;
      continue;
    }
    const step = pi < p.length ? matchOne(p, pi, t[ti]!) : 0;
    if (step > 0) {
      pi += step;
      ti++;
    } else if (starP >= 0) {
      pi = starP;
      ti = ++starT;
    } else {
      return false;
    }
  }
  while (pi < p.length && p[pi] === "*") pi++;
  return pi === p.length;
}

/** How many pattern characters at `pi` matched `c` (0 = no match). */
function matchOne(p: string[], pi: number, c: string): number {
  const token = p[pi]!;
  if (token === "?") return 1;
  if (token === "\\" && pi + 1 < p.length) return p[pi + 1] === c ? 2 : 0;
  if (token === "[") {
    const close = classEnd(p, pi);
    if (close !== -1) return classMatches(p.slice(pi + 1, close), c) ? close - pi + 1 : 0;
  }
  return token === c ? 1 : 0;
}

/** The index of the `]` closing the class opened at `open`, or -1. */
function classEnd(p: string[], open: number): number {
  let i = open + 1;
  if (p[i] === "!" || p[i] === "^") i++;
  if (p[i] === "]") i++; // a leading ] is a member
  for (; i < p.length; i++) {
    if (p[i] === "\\") i++;
    else if (p[i] === "]") return i;
  }
  return -1;
}

function classMatches(body: string[], c: string): boolean {
  let negate = false, i = 0;
  if (body[0] === "!" || body[0] === "^") {
    negate = true;
    i = 1;
  }
  let hit = false;
  for (; i < body.length; i++) {
    let low = body[i]!;
    if (low === "\\" && i + 1 < body.length) low = body[++i]!;
    if (body[i + 1] === "-" && i + 2 < body.length) {
      let high = body[i + 2]!;
      i += 2;
      if (high === "\\" && i + 1 < body.length) high = body[++i]!;
      if (low > high) [low, high] = [high, low];
      if (c >= low && c <= high) hit = true;
    } else if (c === low) {
      hit = true;
    }
  }
  return hit !== negate;
}
