// HTML built from a tagged template that escapes every value it is given: the one way the
// dashboard writes markup, so a stored `<script>` (another writer's data) can only ever be text.

/** Markup the dashboard made itself: the only thing the templates insert without escaping. */
export class Html {
  readonly #text: string;

  /** Only `markup` (and `trusted`) make one. */
  private constructor(text: string) {
    this.#text = text;
  }

  /** Markup whose every part was escaped or written by this package (never data). */
  static trusted(text: string): Html {
    return new Html(text);
  }

  /** The markup. */
  toString(): string {
    return this.#text;
  }
}

/** What a template takes: markup, or values that are escaped (nothing for null and false). */
export type Fragment = Html | string | number | null | undefined | false | readonly Fragment[];

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text made safe for an element's content and a quoted attribute value (values go nowhere else). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** One value as markup: escaped unless it is already `Html`. */
function render(value: Fragment): string {
  if (value instanceof Html) return value.toString();
  if (value === null || value === undefined || value === false) return "";
  if (Array.isArray(value)) return value.map(render).join("");
  if (typeof value === "number") return escapeHtml(String(value));
  if (typeof value !== "string") {
    // A boolean `true` or an object is a bug in a template, never data to print.
    throw new TypeError(`markup: cannot insert ${typeof value}`);
  }
  return escapeHtml(value);
}

/**
 * Markup from a template, every inserted value escaped but `Html`. (Named `markup`, not `html`:
 * `deno fmt` reformats templates tagged `html`, which would change the pages.)
 */
export function markup(strings: TemplateStringsArray, ...values: Fragment[]): Html {
  let text = strings[0]!;
  for (let i = 0; i < values.length; i++) text += render(values[i]!) + strings[i + 1]!;
  return Html.trusted(text);
}
