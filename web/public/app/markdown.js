// Markdown for model output, rendered to Preact elements, never to an HTML string: raw HTML in
// the text stays text, and a link is a link only when its address is http, https or mailto.
// It covers what chat answers use: paragraphs, headings, lists, block quotes, fenced code,
// tables, rules, and inline code, emphasis, strong emphasis and links.
import { h } from "../vendor/preact.mjs";

/** @typedef {import("../vendor/preact.mjs").ComponentChildren} Children */
/** @typedef {(code: string) => Children} CodeAction */

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const BULLET = /^ {0,3}[-*+]\s+(.*)$/;
const ORDERED = /^ {0,3}(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const TABLE_RULE = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

/**
 * The elements of `text`.
 * @param {string} text
 * @param {CodeAction} [codeAction] what each code block offers (its Copy button)
 * @returns {Children[]}
 */
export function markdown(text, codeAction) {
  return blocks(text.replace(/\r\n?/g, "\n").split("\n"), codeAction ?? (() => null));
}

/** @param {string[]} lines @param {CodeAction} codeAction @returns {Children[]} */
function blocks(lines, codeAction) {
  /** @type {Children[]} */
  const out = [];
  let index = 0;
  while (index < lines.length) {
    const line = lines[index];
    if (!line.trim()) {
      index += 1;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const body = [];
      index += 1;
      while (index < lines.length && !lines[index].trim().startsWith(fence[1])) body.push(lines[index++]);
      index += 1;
      const code = body.join("\n");
      out.push(
        h("div", { class: "code-block" }, [
          h("pre", null, h("code", fence[2] ? { "data-language": fence[2] } : null, code)),
          codeAction(code),
        ]),
      );
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      out.push(h(`h${Math.min(heading[1].length + 2, 6)}`, null, inline(heading[2])));
      index += 1;
      continue;
    }
    if (RULE.test(line)) {
      out.push(h("hr", null));
      index += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      const body = [];
      while (index < lines.length && QUOTE.test(lines[index])) body.push(/** @type {RegExpExecArray} */ (QUOTE.exec(lines[index++]))[1]);
      out.push(h("blockquote", null, blocks(body, codeAction)));
      continue;
    }
    if (BULLET.test(line) || ORDERED.test(line)) {
      const ordered = !BULLET.test(line);
      const pattern = ordered ? ORDERED : BULLET;
      /** @type {string[][]} */
      const items = [];
      const start = ordered ? Number(/** @type {RegExpExecArray} */ (ORDERED.exec(line))[1]) : 1;
      while (index < lines.length) {
        const current = lines[index];
        const match = pattern.exec(current);
        if (match) {
          items.push([ordered ? match[2] : match[1]]);
        } else if (current.trim() && /^\s{2,}/.test(current) && items.length) {
          items[items.length - 1].push(current.replace(/^\s{2,4}/, ""));
        } else {
          break;
        }
        index += 1;
      }
      const children = items.map((item) => h("li", null, item.length === 1 ? inline(item[0]) : blocks(item, codeAction)));
      out.push(ordered ? h("ol", start === 1 ? null : { start }, children) : h("ul", null, children));
      continue;
    }
    if (line.includes("|") && index + 1 < lines.length && TABLE_RULE.test(lines[index + 1]) && lines[index + 1].includes("-")) {
      const header = cells(line);
      const aligns = cells(lines[index + 1]).map((cell) =>
        cell.startsWith(":") && cell.endsWith(":") ? "center" : cell.endsWith(":") ? "right" : null,
      );
      index += 2;
      const rows = [];
      while (index < lines.length && lines[index].includes("|") && lines[index].trim()) rows.push(cells(lines[index++]));
      const cell = (/** @type {string} */ tag, /** @type {string} */ content, /** @type {number} */ at) =>
        h(tag, aligns[at] ? { style: { textAlign: aligns[at] } } : null, inline(content));
      out.push(
        h(
          "div",
          { class: "table-scroll" },
          h("table", null, [
            h("thead", null, h("tr", null, header.map((content, at) => cell("th", content, at)))),
            h("tbody", null, rows.map((row) => h("tr", null, header.map((_, at) => cell("td", row[at] ?? "", at))))),
          ]),
        ),
      );
      continue;
    }
    const paragraph = [];
    while (
      index < lines.length &&
      lines[index].trim() &&
      !FENCE.test(lines[index]) &&
      !HEADING.test(lines[index]) &&
      !QUOTE.test(lines[index]) &&
      !(paragraph.length && (BULLET.test(lines[index]) || RULE.test(lines[index])))
    ) {
      paragraph.push(lines[index++].trim());
    }
    /** @type {Children[]} */
    const content = [];
    paragraph.forEach((text, at) => {
      if (at) content.push(h("br", null));
      content.push(...inline(text));
    });
    out.push(h("p", null, content));
  }
  return out;
}

/** The cells of a table row. @param {string} line */
function cells(line) {
  let text = line.trim();
  if (text.startsWith("|")) text = text.slice(1);
  if (text.endsWith("|") && !text.endsWith("\\|")) text = text.slice(0, -1);
  return text.split(/(?<!\\)\|/).map((cell) => cell.trim().replaceAll("\\|", "|"));
}

const INLINE =
  /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\[([^\]\n]+)\]\(\s*<?([^\s)>]+)>?(?:\s+"[^"\n]*")?\s*\)|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__|\*(?=[^\s*])([^*\n]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([^_\n]*?[^\s_])_(?![\w])|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;

/**
 * Inline elements of one line of text.
 * @param {string} text
 * @returns {Children[]}
 */
export function inline(text) {
  // Code spans first, on the text as written: inside one a backslash is literal (CommonMark),
  // while a backtick escaped outside one opens none.
  /** @type {Children[]} */
  const out = [];
  let last = 0;
  for (const match of text.matchAll(CODE_SPAN)) {
    const at = /** @type {number} */ (match.index);
    if (at > last) out.push(...spans(protect(text.slice(last, at))));
    const code = match[2];
    out.push(h("code", null, code.length > 2 && code.startsWith(" ") && code.endsWith(" ") ? code.slice(1, -1) : code));
    last = at + match[0].length;
  }
  if (last < text.length) out.push(...spans(protect(text.slice(last))));
  return out;
}

/** A code span whose opening backticks are not escaped. */
const CODE_SPAN = /(?<![\\`])(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g;

/** @param {string} text with its backslash escapes protected @returns {Children[]} */
function spans(text) {
  /** @type {Children[]} */
  const out = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    const at = /** @type {number} */ (match.index);
    if (at > last) out.push(restore(text.slice(last, at)));
    const [whole, , code, label, href, strong1, strong2, em1, em2, bare] = match;
    if (code !== undefined) {
      // `inline` takes code spans out first; only a run of backticks it left unpaired gets here.
      out.push(h("code", null, restore(code, "\\")));
    } else if (label !== undefined) {
      const safe = safeHref(restore(/** @type {string} */ (href)));
      out.push(safe ? h("a", { href: safe, target: "_blank", rel: "noopener noreferrer" }, spans(label)) : restore(whole));
    } else if (strong1 !== undefined || strong2 !== undefined) {
      out.push(h("strong", null, spans(/** @type {string} */ (strong1 ?? strong2))));
    } else if (em1 !== undefined || em2 !== undefined) {
      out.push(h("em", null, spans(/** @type {string} */ (em1 ?? em2))));
    } else if (bare !== undefined) {
      const safe = safeHref(restore(bare));
      out.push(safe ? h("a", { href: safe, target: "_blank", rel: "noopener noreferrer" }, restore(bare)) : restore(bare));
    }
    last = at + whole.length;
  }
  if (last < text.length) out.push(restore(text.slice(last)));
  return out;
}

/** The Markdown punctuation a backslash escapes. */
const ESCAPABLE = "\\`*_{}[]()#+-.!|>~";
/** Where protected punctuation sits: the private-use characters U+E000 onwards. */
const PROTECTED_BASE = 0xe000;

/**
 * Backslash-escaped punctuation as private-use characters, so no emphasis, link or code
 * delimiter matches it; [restore] gives it back as text.
 * @param {string} text
 */
function protect(text) {
  return text.replace(/\\([\\`*_{}\[\]()#+\-.!|>~])/g, (_, char) =>
    String.fromCharCode(PROTECTED_BASE + ESCAPABLE.indexOf(char)),
  );
}

/**
 * Protected punctuation back as the character it escaped (`prefix` before it: a backslash keeps
 * the escape as it was written, in code).
 * @param {string} text @param {string} [prefix]
 */
function restore(text, prefix = "") {
  return text.replace(/[\ue000-\ue011]/g, (char) => prefix + ESCAPABLE[char.charCodeAt(0) - PROTECTED_BASE]);
}

/**
 * The address of a link when it is http, https or mailto; `null` for anything else
 * (`javascript:`, `data:`, `vbscript:` and the rest render as plain text).
 * @param {string} href
 */
export function safeHref(href) {
  try {
    const url = new URL(href, window.location.origin);
    return ["http:", "https:", "mailto:"].includes(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}
