// The confirmation step of a destructive action, as a page of its own so that it works
// without JavaScript: the same form again, with `confirm=yes`, and a way back.
import { type Html, markup } from "./_html.ts";
import { page } from "./_layout.ts";
import { actionForm } from "./_forms.ts";

export interface ConfirmView {
  basePath: string;
  /** The page's title ("Drop this dead letter?"). */
  title: string;
  /** What will happen, in a sentence. */
  question: string;
  /** Where the confirmed form posts. */
  action: string;
  /** The fields of the action (without the token and `confirm`). */
  fields: Record<string, string>;
  /** The button's label ("Drop", "Drop all", "Delete"). */
  label: string;
  csrf: string;
  /** Where "Cancel" leads. */
  back: string;
}

export function confirmPage(view: ConfirmView): Html {
  const button = actionForm({
    action: view.action,
    label: view.label,
    fields: { ...view.fields, confirm: "yes" },
    csrf: view.csrf,
    danger: true,
  });
  return page(
    { basePath: view.basePath, title: view.title },
    markup`<p>${view.question}</p>
<p><strong>This cannot be undone.</strong></p>
<div class="actions">${button} <a href="${view.back}">Cancel</a></div>`,
  );
}
