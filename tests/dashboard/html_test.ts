// The dashboard's one way of writing markup: values are escaped, markup is not. No permissions.
import assert from "node:assert/strict";
import { escapeHtml, Html, markup } from "../../src/dashboard/_html.ts";

Deno.test("markup escapes every string it is given, so a stored <script> is text", () => {
  const stored = `<script>alert("x")</script> & 'quotes'`;
  assert.equal(
    markup`<p title="${stored}">${stored}</p>`.toString(),
    `<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;">` +
      `&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;</p>`,
  );
});

Deno.test("markup closes no quoted attribute early, whatever the value holds", () => {
  const value = `" onmouseover="alert(1)`;
  assert.equal(
    markup`<a href="${value}">x</a>`.toString(),
    `<a href="&quot; onmouseover=&quot;alert(1)">x</a>`,
  );
});

Deno.test("markup inserts markup it made itself as is, joins arrays, and leaves out null, undefined and false", () => {
  const item = (text: string) => markup`<li>${text}</li>`;
  assert.equal(
    markup`<ul>${["a<", "b"].map(item)}${null}${undefined}${false}${0}</ul>`.toString(),
    "<ul><li>a&lt;</li><li>b</li>0</ul>",
  );
  assert.ok(markup`x` instanceof Html);
});

Deno.test("markup refuses true and objects: a template bug, never data to print", () => {
  assert.throws(() => markup`${true as never}`, TypeError);
  assert.throws(() => markup`${{ toString: () => "<b>" } as never}`, TypeError);
});

Deno.test("escapeHtml turns the five characters markup reads into entities", () => {
  assert.equal(escapeHtml(`&<>"'`), "&amp;&lt;&gt;&quot;&#39;");
  assert.equal(escapeHtml("plain text, é ü 漢"), "plain text, é ü 漢");
});
