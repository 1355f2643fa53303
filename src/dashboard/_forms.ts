// The dashboard's POST forms, rendered: each carries the session's CSRF token and is one
// button labelled with what it does.
import { type Html, markup } from "./_html.ts";

export interface ActionButton {
  /** Where the form posts (a path under the base path). */
  action: string;
  /** The button's label: what it does ("Retry", "Drop", "Retry all", "Drop all", "Delete"). */
  label: string;
  /** The fields that say what to act on. */
  fields: Record<string, string>;
  csrf: string;
  /** Styled as destructive. @default {false} */
  danger?: boolean;
  /** What the button does, for a screen reader or a tooltip. @default {undefined} */
  title?: string;
}

/** A `<form method="post">` with the token, the fields as hidden inputs, and one button. */
export function actionForm(button: ActionButton): Html {
  const fields = Object.entries(button.fields).map(([name, value]) =>
    markup`<input type="hidden" name="${name}" value="${value}">`
  );
  const danger = button.danger ? markup` class="danger"` : null;
  const title = button.title ? markup` title="${button.title}"` : null;
  return markup`<form class="inline" method="post" action="${button.action}"><input type="hidden" name="csrf" value="${button.csrf}">${fields}<button type="submit"${danger}${title}>${button.label}</button></form>`;
}
