// The dashboard's one stylesheet: a string constant (Deno Deploy has no file system), sent
// inline and allowed by its hash in the Content-Security-Policy.

/** The stylesheet every page carries in its `<style>`. */
export const STYLESHEET: string = `
:root { color-scheme: light dark; --fg: #1d2330; --muted: #5d6778; --line: #d9dee7;
  --bg: #ffffff; --panel: #f5f7fa; --accent: #2457c5; --bad: #b42318; --good: #1f7a3d;
  --warn: #9a6700; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e9ef; --muted: #9aa3b2; --line: #343b48;
  --bg: #14171c; --panel: #1c2027; --accent: #7aa2ff; --bad: #ff7b72; --good: #56d364;
  --warn: #e3b341; } }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: .25rem 1.25rem; align-items: baseline;
  padding: .75rem 1.5rem; border-bottom: 1px solid var(--line); background: var(--panel); }
header strong { font-size: 1.05rem; margin-right: .5rem; }
nav a { margin-right: 1rem; }
main { padding: 1rem 1.5rem 3rem; max-width: 80rem; }
h1 { font-size: 1.35rem; margin: .5rem 0 1rem; overflow-wrap: anywhere; }
h2 { font-size: 1.1rem; margin: 1.75rem 0 .5rem; }
a { color: var(--accent); }
table { border-collapse: collapse; width: 100%; margin: .5rem 0; }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line);
  vertical-align: top; overflow-wrap: anywhere; }
th { font-weight: 600; color: var(--muted); font-size: .85rem; overflow-wrap: normal; }
.nowrap { white-space: nowrap; }
table.timers td:first-child { overflow-wrap: break-word; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: .85rem; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px;
  padding: .75rem; overflow: auto; max-height: 32rem; white-space: pre-wrap;
  overflow-wrap: anywhere; }
.muted { color: var(--muted); }
.status { display: inline-block; padding: 0 .45rem; border-radius: 999px; font-size: .8rem;
  font-weight: 600; border: 1px solid currentColor; }
.status-done { color: var(--good); }
.status-failed, .status-cancelled { color: var(--bad); }
.status-running, .status-pending { color: var(--accent); }
.status-suspended, .status-cancelling { color: var(--warn); }
.cards { display: flex; flex-wrap: wrap; gap: .75rem; margin: .5rem 0 1rem; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: .6rem .9rem;
  background: var(--panel); min-width: 13rem; }
.card h3 { margin: 0 0 .3rem; font-size: .95rem; }
.card dl { display: grid; grid-template-columns: auto auto; gap: .1rem 1rem; margin: 0; }
.card dt { color: var(--muted); }
.card dd { margin: 0; text-align: right; font-variant-numeric: tabular-nums; }
.dead { color: var(--bad); font-weight: 600; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin: .5rem 0; }
form.filters label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); }
form.inline { display: inline; margin: 0 .25rem 0 0; }
input, select, button { font: inherit; padding: .25rem .5rem; border: 1px solid var(--line);
  border-radius: 6px; background: var(--bg); color: var(--fg); }
button { cursor: pointer; background: var(--panel); }
button.danger { color: var(--bad); border-color: var(--bad); }
.notice { border: 1px solid var(--good); border-radius: 6px; padding: .5rem .75rem; margin: .5rem 0 1rem; }
.pager { margin: .75rem 0; display: flex; gap: 1rem; }
ol.timeline { list-style: none; margin: .5rem 0; padding: 0 0 0 1rem; border-left: 2px solid var(--line); }
ol.timeline li { position: relative; margin: 0 0 .75rem; padding-left: .75rem; }
ol.timeline li::before { content: ""; position: absolute; left: -1.45rem; top: .45rem;
  width: .7rem; height: .7rem; border-radius: 50%; background: var(--accent); }
ol.timeline .step { font-weight: 600; }
details summary { cursor: pointer; color: var(--muted); font-size: .85rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1.25rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.actions { margin: .75rem 0; display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
`;

let hash: Promise<string> | undefined;

/** The stylesheet's CSP source, `'sha256-…'` (computed once). */
export function stylesheetHash(): Promise<string> {
  hash ??= crypto.subtle.digest("SHA-256", new TextEncoder().encode(STYLESHEET)).then(
    (digest) => `'sha256-${new Uint8Array(digest).toBase64()}'`,
  );
  return hash;
}
