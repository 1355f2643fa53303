// A destructive action's confirmation page (no JavaScript): the form again with `confirm=yes`.
import { type Html, markup } from "./_html.ts";
import { actionForm, page } from "./_layout.ts";

export interface ConfirmView {
  basePath: string;
  title: string;
  /** What will happen, in a sentence. */
  question: string;
  /** Where the form posts, with which fields (without the token and `confirm`). */
  action: string;
  fields: Record<string, string>;
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
