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
/// The most text one `type` action types (characters).
pub const MAX_TYPED: usize = 10_000;
/// How long a page may take to settle after a navigation or an action.
pub const SETTLE: Duration = Duration::from_secs(15);
/// How long an action's navigation may take to begin (a click's new document replacing the
/// old one); an action that navigates nowhere costs this much.
pub const NAVIGATION_STARTS: Duration = Duration::from_millis(1500);

/// Where an element leads, as the snapshot and the action check compute it (run on the
/// element): a link's address, or the address its form submits to; empty otherwise.
const TARGET: &str = r#"function () {
  const e = this;
  if (e.tagName === 'A' && e.href) return e.href.slice(0, 2000);
  const form = e.form || e.closest('form');
  if (!form) return '';
  // The attribute, not `form.action`: a field named `action` would stand in for it.
  try { return new URL(form.getAttribute('action') || '', document.baseURI).href.slice(0, 2000); } catch (_) { return ''; }
}"#;

/// The words of the buttons that submit an element's form (run on the element); empty when it
/// is in none.
const FORM_WORDS: &str = r#"function () {
  const form = this.form || this.closest('form');
  if (!form) return '';
  return Array.from(form.querySelectorAll('button, input[type=submit], input[type=image]'))
    .filter((b) => b.tagName !== 'BUTTON' || (b.getAttribute('type') || 'submit') === 'submit')
    .map((b) => (b.innerText || b.value || b.getAttribute('aria-label') || '').trim())
    .join(' / ').replace(/\s+/g, ' ').slice(0, 200);
}"#;

/// The kinds a snapshot names; any other (a website's own `role`) is `other`.
const KINDS: &str = "['link', 'button', 'checkbox', 'radio', 'select', 'textarea', 'text', 'email', 'password', \
    'search', 'tel', 'url', 'number', 'date', 'file', 'combobox', 'textbox', 'menuitem', 'tab', 'switch', 'option']";

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
    /// from a fixed list (`other` for anything else: a website's own `role` is not shown).
    pub kind: String,
    pub label: String,
    /// Where it leads: a link's address, or the address its form submits to.
    #[serde(default)]
    pub target: String,
    /// The words of the buttons that submit its form.
    #[serde(default)]
    pub form: String,
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
    /// The element no longer carries the label it was approved with. The message names no
    /// label: a label is the website's text, and the message reaches the agent unmarked.
    #[error("element {reference} is no longer the one approved (the page changed); read the page again")]
    Changed { reference: String },
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
  const target = {TARGET};
  const form = {FORM_WORDS};
  const kinds = {KINDS};
  const kind = (e) => {{
    const role = e.getAttribute('role');
    const named = role ? role
      : e.tagName === 'A' ? 'link'
      : e.tagName === 'INPUT' ? (['submit', 'button', 'reset', 'image'].includes(e.type) ? 'button' : e.type)
      : e.tagName.toLowerCase();
    return kinds.includes(named) ? named : 'other';
  }};
  const elements = Array.from(document.querySelectorAll({selector})).slice(0, {MAX_ELEMENTS})
    .map((e, i) => ({{ ref: 'e' + i, kind: kind(e), label: label.call(e), target: target.call(e), form: form.call(e) }}));
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

/// Does `action` on the element `reference` if it still carries `label` (and leads to `target`,
/// when one is given), then waits for the page to settle and reads it.
pub async fn act(
    page: &Page,
    reference: &str,
    label: &str,
    target: Option<&str>,
    action: &Action,
) -> Result<Snapshot, PageError> {
    let element = element(page, reference, label, target).await?;
    let before = document(page).await;
    match action {
        Action::Click => {
            element.scroll_into_view().await?;
            let point = element.clickable_point().await?;
            // The click lands where the element is only if nothing covers it there.
            let hit = element
                .call_js_fn(
                    format!(
                        "function () {{ const hit = document.elementFromPoint({}, {}); return hit === this || this.contains(hit); }}",
                        point.x, point.y
                    ),
                    false,
                )
                .await?;
            if hit.result.value != Some(serde_json::Value::Bool(true)) {
                return Err(PageError::Unsupported("something else covers the element"));
            }
            page.click(point).await?;
        }
        Action::Type { text } => {
            if text.chars().count() > MAX_TYPED {
                return Err(PageError::Unsupported("more text than one action types"));
            }
            // Only a text field takes text, and only once it has the focus: the text goes in
            // whole (any character), as a paste would, never as key presses elsewhere.
            element.scroll_into_view().await?;
            let focused = element
                .call_js_fn(
                    "function () { const text = ['text', 'search', 'email', 'url', 'tel', 'password', 'number'];
                       const field = this.tagName === 'TEXTAREA' || (this.tagName === 'INPUT' && text.includes(this.type)) || this.isContentEditable;
                       if (!field || this.disabled || this.readOnly) return false;
                       this.focus();
                       if (document.activeElement !== this) return false;
                       if ('value' in this) { this.value = ''; this.dispatchEvent(new Event('input', { bubbles: true })); }
                       return true; }",
                    false,
                )
                .await?;
            if focused.result.value != Some(serde_json::Value::Bool(true)) {
                return Err(PageError::Unsupported("not a text field that can take the focus"));
            }
            page.execute(chromiumoxide::cdp::browser_protocol::input::InsertTextParams::new(
                text.clone(),
            ))
            .await?;
            element
                .call_js_fn(
                    "function () { this.dispatchEvent(new Event('change', { bubbles: true })); }",
                    false,
                )
                .await?;
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
    match action {
        Action::Click | Action::Submit => settle_after(page, before).await,
        Action::Type { .. } | Action::Select { .. } => settle(page).await,
    }
    snapshot(page).await
}

/// The element at `reference` (`e<position>`), if it still carries `label` and leads to
/// `target` (when given): another element with the same words at that position (a list that
/// changed) is refused.
async fn element(page: &Page, reference: &str, label: &str, target: Option<&str>) -> Result<Element, PageError> {
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
        });
    }
    if let Some(target) = target {
        let leads = element.call_js_fn(TARGET, false).await?;
        if leads.result.value.as_ref().and_then(serde_json::Value::as_str) != Some(target) {
            return Err(PageError::Changed {
                reference: reference.to_owned(),
            });
        }
    }
    Ok(element)
}

/// The page's current document, told apart by when it began (`performance.timeOrigin`). An
/// evaluation waits for the page's script context, which a navigation replaces: one that does
/// not answer within a second counts as no answer.
async fn document(page: &Page) -> Option<f64> {
    tokio::time::timeout(
        Duration::from_secs(1),
        page.evaluate_expression("performance.timeOrigin"),
    )
    .await
    .ok()?
    .ok()
    .and_then(|origin| origin.value().and_then(serde_json::Value::as_f64))
}

/// Waits (at most [`SETTLE`]) until the page has finished loading: after an action that may
/// navigate, first (for up to [`NAVIGATION_STARTS`]) for another document to replace
/// `before`, then for it to be complete.
pub async fn settle_after(page: &Page, before: Option<f64>) {
    let deadline = Instant::now() + SETTLE;
    let starts = Instant::now() + NAVIGATION_STARTS;
    while before.is_some() && Instant::now() < starts {
        let now = document(page).await;
        if now.is_some() && now != before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    while Instant::now() < deadline {
        let state = tokio::time::timeout(Duration::from_secs(1), page.evaluate_expression("document.readyState")).await;
        if state.is_ok_and(|state| {
            state.is_ok_and(|state| state.value().and_then(serde_json::Value::as_str) == Some("complete"))
        }) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits (at most [`SETTLE`]) until the page has finished loading.
pub async fn settle(page: &Page) {
    settle_after(page, None).await;
}

/// What the owner does on a remote sign-in page's picture of the website.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Input {
    /// A click at a point of the page's picture (CSS pixels from its top left).
    Click { x: f64, y: f64 },
    /// Text typed into whatever has the focus.
    Text { text: String },
    /// One key.
    Key { key: Key },
}

/// The keys a sign-in page offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Key {
    Enter,
    Tab,
    Backspace,
    Escape,
}

impl Key {
    /// The key's DOM name, Windows virtual key code and the text it types.
    fn parts(self) -> (&'static str, i64, Option<&'static str>) {
        match self {
            Key::Enter => ("Enter", 13, Some("\r")),
            Key::Tab => ("Tab", 9, None),
            Key::Backspace => ("Backspace", 8, None),
            Key::Escape => ("Escape", 27, None),
        }
    }
}

/// The most text one input types.
pub const MAX_INPUT_TEXT: usize = 1_000;

/// Does `input` on `page`, as the owner's pointer and keyboard would.
pub async fn input(page: &Page, input: &Input) -> Result<(), PageError> {
    use chromiumoxide::cdp::browser_protocol::input::{
        DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
        InsertTextParams, MouseButton,
    };
    match input {
        Input::Click { x, y } => {
            if !(x.is_finite() && y.is_finite() && (0.0..=10_000.0).contains(x) && (0.0..=10_000.0).contains(y)) {
                return Err(PageError::Unsupported("a point outside the page"));
            }
            for kind in [
                DispatchMouseEventType::MousePressed,
                DispatchMouseEventType::MouseReleased,
            ] {
                let event = DispatchMouseEventParams::builder()
                    .r#type(kind)
                    .x(*x)
                    .y(*y)
                    .button(MouseButton::Left)
                    .click_count(1)
                    .build()
                    .map_err(|_| PageError::Unsupported("a click"))?;
                page.execute(event).await?;
            }
        }
        Input::Text { text } => {
            if text.chars().count() > MAX_INPUT_TEXT {
                return Err(PageError::Unsupported("more text than one input types"));
            }
            page.execute(InsertTextParams::new(text.clone())).await?;
        }
        Input::Key { key } => {
            let (name, code, text) = key.parts();
            for kind in [DispatchKeyEventType::KeyDown, DispatchKeyEventType::KeyUp] {
                let mut event = DispatchKeyEventParams::builder()
                    .r#type(kind.clone())
                    .key(name)
                    .code(name)
                    .windows_virtual_key_code(code)
                    .native_virtual_key_code(code);
                if let (DispatchKeyEventType::KeyDown, Some(text)) = (&kind, text) {
                    event = event.text(text);
                }
                page.execute(event.build().map_err(|_| PageError::Unsupported("a key"))?)
                    .await?;
            }
        }
    }
    Ok(())
}

/// A picture of what `page` shows (PNG).
pub async fn screenshot(page: &Page) -> Result<Vec<u8>, PageError> {
    Ok(page
        .screenshot(chromiumoxide::page::ScreenshotParams::builder().build())
        .await?)
}
