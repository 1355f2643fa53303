// The pages that say why there is nothing to show: not found, not allowed, refused, failed.
// Their texts are fixed by the handler; only an id the visitor asked for is ever repeated, escaped.
import { type Html, markup } from "./_html.ts";
import { href, page } from "./_layout.ts";

/** A page with a title and one paragraph, and a link to the first page. */
export function messagePage(basePath: string, title: string, text: string): Html {
  return page(
    { basePath, title },
    markup`<p>${text}</p>
<p><a href="${href(basePath, [])}">Back to the executions</a></p>`,
  );
}
