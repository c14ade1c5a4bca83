// Unit tests of the Markdown renderer (web/public/app/markdown.js) in Node: model output becomes
// elements, never HTML, and only http, https and mailto addresses become links.
import { test } from "node:test";
import assert from "node:assert/strict";
import { html } from "./html.mjs";

// The renderer resolves links against the page's origin.
globalThis.window = /** @type {any} */ ({ location: { origin: "https://steward.example" } });
const { markdown, inline, safeHref } = await import("../public/app/markdown.js");

/** @param {string} text */
const render = (text) => html(markdown(text));

test("paragraphs, headings, emphasis and inline code", () => {
  assert.equal(
    render("# Plan\n\nSome **bold** and *soft* words,\nthen `x < y`."),
    "<h3>Plan</h3><p>Some <strong>bold</strong> and <em>soft</em> words,<br></br>then <code>x &lt; y</code>.</p>",
  );
});

test("raw HTML in the text stays text", () => {
  assert.equal(
    render('<img src=x onerror="alert(1)"> <script>alert(2)</script>'),
    "<p>&lt;img src=x onerror=\"alert(1)\"&gt; &lt;script&gt;alert(2)&lt;/script&gt;</p>",
  );
});

test("links: http, https and mailto only; anything else stays text", () => {
  assert.equal(
    html(inline("[docs](https://example.com/a) and [mail](mailto:ada@example.com)")),
    '<a href="https://example.com/a" target="_blank" rel="noopener noreferrer">docs</a> and ' +
      '<a href="mailto:ada@example.com" target="_blank" rel="noopener noreferrer">mail</a>',
  );
  assert.equal(html(inline("[click](javascript:alert(1))")), "[click](javascript:alert(1))");
  for (const address of ["javascript:alert(1)", "data:text/html,x", "vbscript:x", "JaVaScRiPt:alert(1)"]) {
    assert.equal(safeHref(address), null, address);
  }
  assert.equal(safeHref("/v1/sessions"), "https://steward.example/v1/sessions", "relative to the page");
  assert.equal(
    html(inline("see https://example.com/x.")),
    'see <a href="https://example.com/x" target="_blank" rel="noopener noreferrer">https://example.com/x</a>.',
  );
});

test("lists, nested blocks and an ordered list's start", () => {
  assert.equal(render("- one\n- two\n  more"), "<ul><li>one</li><li><p>two<br></br>more</p></li></ul>");
  assert.equal(render("3. third\n4. fourth"), '<ol start="3"><li>third</li><li>fourth</li></ol>');
  assert.equal(render("> quoted **text**"), "<blockquote><p>quoted <strong>text</strong></p></blockquote>");
});

test("fenced code keeps its text and offers the code action", () => {
  const offered = [];
  const rendered = html(
    markdown("```sh\ncargo xtask dev <flags>\n```", (code) => {
      offered.push(code);
      return null;
    }),
  );
  assert.equal(rendered, '<div class="code-block"><pre><code data-language="sh">cargo xtask dev &lt;flags&gt;</code></pre></div>');
  assert.deepEqual(offered, ["cargo xtask dev <flags>"]);
});

test("tables with alignment, escaped pipes and short rows", () => {
  assert.equal(
    render("| tool | risk |\n|:--|--:|\n| notes\\|add | medium |\n| x |"),
    '<div class="table-scroll"><table><thead><tr><th>tool</th><th style="textAlign:right">risk</th></tr></thead>' +
      '<tbody><tr><td>notes|add</td><td style="textAlign:right">medium</td></tr>' +
      '<tr><td>x</td><td style="textAlign:right"></td></tr></tbody></table></div>',
  );
});

test("rules and backslash escapes", () => {
  assert.equal(render("a\n\n---\n\n\\*not emphasis\\*"), "<p>a</p><hr></hr><p>*not emphasis*</p>");
  assert.equal(
    html(inline("\\[not a label\\](https://example.com)")),
    '[not a label](<a href="https://example.com/" target="_blank" rel="noopener noreferrer">https://example.com</a>)',
    "escaped brackets are text; the address alone is still a bare link",
  );
  assert.equal(html(inline("`a\\*b` and \\_c\\_")), "<code>a\\*b</code> and _c_", "a code span keeps its backslashes");
  assert.equal(html(inline("Type `\\` to escape")), "Type <code>\\</code> to escape", "a code span of one backslash");
  assert.equal(html(inline("the folder `C:\\Users\\` here")), "the folder <code>C:\\Users\\</code> here");
  assert.equal(html(inline("not code: \\`x` and **bold**")), "not code: `x` and <strong>bold</strong>", "an escaped backtick opens no span");
});
