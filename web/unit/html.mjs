// Renders Preact elements to an HTML-like string for assertions: element names, attributes
// (functions left out) and text, escaped. Enough to compare what the Markdown renderer builds.

/** @param {string} text */
const escape = (text) => text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** A style object as CSS-like text. @param {object} style */
const styleText = (style) => Object.entries(style).map(([name, value]) => `${name}:${value}`).join(";");

/** @param {unknown} node @returns {string} */
export function html(node) {
  if (node === null || node === undefined || typeof node === "boolean") return "";
  if (typeof node === "string" || typeof node === "number") return escape(String(node));
  if (Array.isArray(node)) return node.map(html).join("");
  const { type, props } = /** @type {{type: string, props: Record<string, unknown>}} */ (node);
  const attributes = Object.entries(props)
    .filter(([name, value]) => name !== "children" && value !== null && value !== undefined && typeof value !== "function")
    .map(([name, value]) => ` ${name}="${escape(typeof value === "object" ? styleText(value) : String(value))}"`)
    .join("");
  return `<${type}${attributes}>${html(props.children)}</${type}>`;
}
