//! What the agent sees of a page and what it can do on it: a [`Snapshot`] (address, title,
//! visible text and the interactive elements, each with a reference and a label) and the
//! [`Action`]s on one element (click, type, select, submit). Everything in a snapshot is
//! website text: whoever shows it to a model or a person marks it as such.
//!
//! An element is referred to by its position among the page's interactive elements (`e0`,
//! `e1`, …) **and** its label: an action whose element no longer carries the label it was
//! approved with is refused ([`PageError::Changed`]), so a page that changed between the read
//! and the act never receives an action meant for something else. A password field's value is
//! never read.

use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::element::Element;
use serde::{Deserialize, Serialize};

/// The elements an action can name, in document order.
pub const INTERACTIVE: &str = "a[href], button, input:not([type=hidden]), select, textarea, [role=button], [role=link]";

/// The most visible text a snapshot carries (characters).
pub const MAX_TEXT: usize = 8_000;
/// The most elements a snapshot lists.
pub const MAX_ELEMENTS: usize = 200;
/// How long a page may take to settle after a navigation or an action.
pub const SETTLE: Duration = Duration::from_secs(15);

/// One element's label, as the snapshot and the action check compute it (run on the element).
const LABEL: &str = r#"function () {
  const e = this;
  const pick = (...values) => values.find((v) => typeof v === 'string' && v.trim() !== '') || '';
  const labelled = e.labels && e.labels.length ? e.labels[0].innerText : '';
  const shown = e.tagName === 'INPUT' && ['submit', 'button', 'reset'].includes(e.type) ? e.value : '';
  return pick(e.getAttribute('aria-label'), labelled, shown, e.innerText, e.getAttribute('placeholder'),
    e.getAttribute('title'), e.getAttribute('alt'), e.getAttribute('name')).trim().replace(/\s+/g, ' ').slice(0, 200);
}"#;

/// What a page shows, for the agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub url: String,
    pub title: String,
    /// The page's visible text, at most [`MAX_TEXT`] characters.
    pub text: String,
    pub elements: Vec<ElementView>,
}

/// One interactive element.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElementView {
    /// `e<position>` among the page's interactive elements.
    #[serde(rename = "ref")]
    pub reference: String,
    /// `link`, `button`, `text`, `password`, `email`, `checkbox`, `select`, `textarea`, …
    pub kind: String,
    pub label: String,
}

/// An action on one element.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    Click,
    /// Replaces the field's text with `text`.
    Type {
        text: String,
    },
    /// Chooses the option whose value is `value`.
    Select {
        value: String,
    },
    /// Submits the element's form.
    Submit,
}

impl Action {
    pub fn name(&self) -> &'static str {
        match self {
            Action::Click => "click",
            Action::Type { .. } => "type",
            Action::Select { .. } => "select",
            Action::Submit => "submit",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("no element {0} on the page")]
    NoElement(String),
    #[error("element {reference} is no longer `{expected}` (the page changed)")]
    Changed { reference: String, expected: String },
    #[error("the element cannot take this action ({0})")]
    Unsupported(&'static str),
    #[error("the page did not answer: {0}")]
    Browser(#[from] chromiumoxide::error::CdpError),
}

/// Reads what `page` shows.
pub async fn snapshot(page: &Page) -> Result<Snapshot, PageError> {
    let script = format!(
        r#"(() => {{
  const label = {LABEL};
  const kind = (e) => {{
    const role = e.getAttribute('role');
    if (role) return role;
    if (e.tagName === 'A') return 'link';
    if (e.tagName === 'INPUT') return ['submit', 'button', 'reset', 'image'].includes(e.type) ? 'button' : e.type;
    return e.tagName.toLowerCase();
  }};
  const elements = Array.from(document.querySelectorAll({selector})).slice(0, {MAX_ELEMENTS})
    .map((e, i) => ({{ ref: 'e' + i, kind: kind(e), label: label.call(e) }}));
  const text = document.body ? document.body.innerText.slice(0, {MAX_TEXT}) : '';
  return {{ url: location.href, title: document.title, text, elements }};
}})()"#,
        selector = serde_json::Value::from(INTERACTIVE),
    );
    let evaluated = page.evaluate_expression(script).await?;
    evaluated
        .into_value::<Snapshot>()
        .map_err(|_| PageError::Unsupported("the page's snapshot could not be read"))
}

/// Does `action` on the element `reference` if it still carries `label`, then waits for the
/// page to settle and reads it.
pub async fn act(page: &Page, reference: &str, label: &str, action: &Action) -> Result<Snapshot, PageError> {
    let element = element(page, reference, label).await?;
    match action {
        Action::Click => {
            element.scroll_into_view().await?;
            element.click().await?;
        }
        Action::Type { text } => {
            element.scroll_into_view().await?;
            element.click().await?;
            element
                .call_js_fn(
                    "function () { this.value = ''; this.dispatchEvent(new Event('input', { bubbles: true })); }",
                    false,
                )
                .await?;
            element.type_str(text).await?;
        }
        Action::Select { value } => {
            let chosen = element
                .call_js_fn(
                    format!(
                        "function () {{ if (this.tagName !== 'SELECT') return false; const v = {}; if (!Array.from(this.options).some((o) => o.value === v)) return false; this.value = v; this.dispatchEvent(new Event('input', {{ bubbles: true }})); this.dispatchEvent(new Event('change', {{ bubbles: true }})); return true; }}",
                        serde_json::Value::from(value.as_str())
                    ),
                    false,
                )
                .await?;
            if chosen.result.value != Some(serde_json::Value::Bool(true)) {
                return Err(PageError::Unsupported("not a list with that option"));
            }
        }
        Action::Submit => {
            let submitted = element
                .call_js_fn(
                    "function () { const form = this.form || this.closest('form'); if (!form) return false; form.requestSubmit(); return true; }",
                    false,
                )
                .await?;
            if submitted.result.value != Some(serde_json::Value::Bool(true)) {
                return Err(PageError::Unsupported("not in a form"));
            }
        }
    }
    settle(page).await;
    snapshot(page).await
}

/// The element at `reference` (`e<position>`), if it still carries `label`.
async fn element(page: &Page, reference: &str, label: &str) -> Result<Element, PageError> {
    let missing = || PageError::NoElement(reference.to_owned());
    let position: usize = reference
        .strip_prefix('e')
        .and_then(|position| position.parse().ok())
        .ok_or_else(missing)?;
    let mut elements = page.find_elements(INTERACTIVE).await?;
    if position >= elements.len().min(MAX_ELEMENTS) {
        return Err(missing());
    }
    let element = elements.swap_remove(position);
    let current = element.call_js_fn(LABEL, false).await?;
    if current.result.value.as_ref().and_then(serde_json::Value::as_str) != Some(label) {
        return Err(PageError::Changed {
            reference: reference.to_owned(),
            expected: label.to_owned(),
        });
    }
    Ok(element)
}

/// Waits (at most [`SETTLE`]) until the page, after what may have started a navigation, has
/// finished loading.
pub async fn settle(page: &Page) {
    let deadline = Instant::now() + SETTLE;
    tokio::time::sleep(Duration::from_millis(250)).await;
    while Instant::now() < deadline {
        let state = page.evaluate_expression("document.readyState").await;
        if state.is_ok_and(|state| state.value().and_then(serde_json::Value::as_str) == Some("complete")) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
