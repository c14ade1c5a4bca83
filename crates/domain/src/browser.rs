//! The agent's browser actions (`browser.act`): which change something and so wait for the
//! owner's approval, which a task permission never covers (its exceptions: purchases and
//! signing out), and the task permission the server offers on an approval.

use serde::{Deserialize, Serialize};

/// What `browser.act` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActKind {
    /// Opens a page of the profile's origins (a read).
    Navigate,
    /// Reads the page the task's browser shows (a read).
    Read,
    Click,
    /// Replaces a text field's content.
    Type,
    /// Chooses an option of a list.
    Select,
    /// Submits an element's form.
    Submit,
}

impl ActKind {
    pub const ALL: [ActKind; 6] = [
        ActKind::Navigate,
        ActKind::Read,
        ActKind::Click,
        ActKind::Type,
        ActKind::Select,
        ActKind::Submit,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ActKind::Navigate => "navigate",
            ActKind::Read => "read",
            ActKind::Click => "click",
            ActKind::Type => "type",
            ActKind::Select => "select",
            ActKind::Submit => "submit",
        }
    }

    pub fn parse(text: &str) -> Option<ActKind> {
        ActKind::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// Whether it may change something on the website: it then waits for the owner's approval
    /// (once, or a task permission's). Reads within the profile's origins need none.
    pub const fn changes(self) -> bool {
        !matches!(self, ActKind::Navigate | ActKind::Read)
    }
}

/// An action a task permission never covers: each one is approved on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Exception {
    /// Buying, paying, ordering, subscribing or donating.
    Purchase,
    /// Signing out (which would end the profile's website session).
    SignOut,
}

impl Exception {
    pub const ALL: [Exception; 2] = [Exception::Purchase, Exception::SignOut];

    pub const fn as_str(self) -> &'static str {
        match self {
            Exception::Purchase => "purchase",
            Exception::SignOut => "sign_out",
        }
    }

    pub fn parse(text: &str) -> Option<Exception> {
        Exception::ALL.into_iter().find(|exception| exception.as_str() == text)
    }
}

/// Words and phrases of an element's label (or of its form's buttons) that make an action a
/// purchase: any one of them, anywhere in the words ("Place your order" has `order`).
const PURCHASE_PHRASES: [&str; 25] = [
    "buy",
    "purchase",
    "pay",
    "payment",
    "checkout",
    "check out",
    "order",
    "subscribe",
    "subscription",
    "donate",
    "upgrade",
    "renew",
    "billing",
    "card",
    "kaufen",
    "bestellen",
    "zahlen",
    "comprar",
    "pagar",
    "acheter",
    "commander",
    "payer",
    "acquista",
    "ordina",
    "paga",
];
/// … and signing out.
const SIGN_OUT_PHRASES: [&str; 11] = [
    "sign out",
    "signout",
    "log out",
    "logout",
    "log off",
    "logoff",
    "sign off",
    "switch account",
    "abmelden",
    "déconnexion",
    "cerrar sesión",
];
/// Path segments of a page, a link's target or a form's address that make every action there
/// one of them.
const PURCHASE_SEGMENTS: [&str; 7] = ["checkout", "payment", "payments", "pay", "purchase", "billing", "order"];
const SIGN_OUT_SEGMENTS: [&str; 7] = [
    "logout", "signout", "sign-out", "log-out", "logoff", "sign_out", "log_out",
];

/// `text` lowercased, with every run of other than letters and digits as one space.
fn words(text: &str) -> String {
    let mut folded = String::with_capacity(text.len() + 2);
    folded.push(' ');
    for character in text.chars().flat_map(char::to_lowercase) {
        if character.is_alphanumeric() {
            folded.push(character);
        } else if !folded.ends_with(' ') {
            folded.push(' ');
        }
    }
    if !folded.ends_with(' ') {
        folded.push(' ');
    }
    folded
}

fn names_any(folded: &str, phrases: &[&str]) -> bool {
    phrases.iter().any(|phrase| folded.contains(&format!(" {phrase} ")))
}

fn path_has(url: &str, segments: &[&str]) -> bool {
    let path = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest.find('/').map_or("", |at| &rest[at..]));
    let path = path.split(['?', '#']).next().unwrap_or_default().to_lowercase();
    path.split('/').any(|segment| segments.contains(&segment))
}

/// What an action is judged by: the words the owner reads and the addresses involved.
#[derive(Clone, Copy, Debug, Default)]
pub struct Judged<'a> {
    /// The element's label (website text).
    pub label: &'a str,
    /// The words of the buttons that submit the element's form.
    pub form: &'a str,
    /// The page's address.
    pub page: &'a str,
    /// Where the element leads: a link's address or its form's.
    pub target: &'a str,
}

/// The exception an action falls under, judged from its words and addresses (a navigation's
/// address as `page`). Deliberately broad: a false alarm costs one more approval; a miss would
/// let a task permission buy something or sign the owner out. The word lists are mostly
/// English (with a few common words of other languages).
pub fn exception(judged: Judged<'_>) -> Option<Exception> {
    let words = words(&format!("{} {}", judged.label, judged.form));
    let at = |segments: &[&str]| path_has(judged.page, segments) || path_has(judged.target, segments);
    if names_any(&words, &SIGN_OUT_PHRASES) || at(&SIGN_OUT_SEGMENTS) {
        return Some(Exception::SignOut);
    }
    if names_any(&words, &PURCHASE_PHRASES) || at(&PURCHASE_SEGMENTS) {
        return Some(Exception::Purchase);
    }
    None
}

/// The most actions a task permission covers, unless the operator sets otherwise.
pub const TASK_MAX_ACTIONS: u32 = 20;
/// How long a task permission lasts, in minutes, unless the operator sets otherwise.
pub const TASK_MINUTES: u32 = 15;
/// The bounds an operator's limits must keep.
pub const TASK_MAX_ACTIONS_RANGE: std::ops::RangeInclusive<u32> = 1..=100;
pub const TASK_MINUTES_RANGE: std::ops::RangeInclusive<u32> = 1..=120;

/// A task permission's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskLimits {
    pub max_actions: u32,
    pub minutes: u32,
}

impl Default for TaskLimits {
    fn default() -> TaskLimits {
        TaskLimits {
            max_actions: TASK_MAX_ACTIONS,
            minutes: TASK_MINUTES,
        }
    }
}

/// The task permission an approval of a browser action offers (`Allow all actions for this
/// task`): the profile's origins as its site scope, at most `max_actions` actions (this one
/// included) within `minutes`, never an exception.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TaskOffer {
    /// The origins the permission covers: the profile's.
    pub origins: Vec<String>,
    pub max_actions: u32,
    pub minutes: u32,
    /// What it never covers.
    pub exceptions: Vec<Exception>,
}

impl TaskOffer {
    /// The offer for an action on a profile of `origins`; `None` for an exception, which is
    /// approved on its own.
    pub fn for_action(origins: &[String], exception: Option<Exception>, limits: TaskLimits) -> Option<TaskOffer> {
        if exception.is_some() || origins.is_empty() {
            return None;
        }
        Some(TaskOffer {
            origins: origins.to_vec(),
            max_actions: limits.max_actions,
            minutes: limits.minutes,
            exceptions: Exception::ALL.to_vec(),
        })
    }
}

/// The origin (`scheme://host[:port]`) of an absolute `url`, lowercased; `None` when it has none.
pub fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if scheme.is_empty() || authority.is_empty() || authority.contains('@') {
        return None;
    }
    let authority = authority.to_lowercase();
    let scheme = scheme.to_lowercase();
    let authority = match (
        scheme.as_str(),
        authority.strip_suffix(":443"),
        authority.strip_suffix(":80"),
    ) {
        ("https", Some(host), _) | ("http", _, Some(host)) => host.to_owned(),
        _ => authority,
    };
    Some(format!("{scheme}://{authority}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changes_wait_for_approval() {
        for kind in ActKind::ALL {
            assert_eq!(ActKind::parse(kind.as_str()), Some(kind));
        }
        assert!(!ActKind::Navigate.changes() && !ActKind::Read.changes());
        assert!(ActKind::Click.changes() && ActKind::Type.changes());
        assert!(ActKind::Select.changes() && ActKind::Submit.changes());
        assert_eq!(ActKind::parse("Click"), None);
    }

    #[test]
    fn purchases_and_signing_out_are_exceptions() {
        let shop = "https://shop.example/products/7";
        let label = |label| {
            exception(Judged {
                label,
                page: shop,
                ..Judged::default()
            })
        };
        assert_eq!(label("Add to basket"), None);
        assert_eq!(label("Search"), None);
        assert_eq!(label("Buy now"), Some(Exception::Purchase));
        assert_eq!(label("PLACE ORDER ›"), Some(Exception::Purchase));
        assert_eq!(label("Place your order"), Some(Exception::Purchase));
        assert_eq!(label("Submit payment"), Some(Exception::Purchase));
        assert_eq!(label("Pay £12.00"), Some(Exception::Purchase));
        assert_eq!(label("Jetzt kaufen"), Some(Exception::Purchase));
        assert_eq!(label("PayPal"), None, "a word, not a prefix");
        assert_eq!(label("Log out"), Some(Exception::SignOut));
        assert_eq!(label("Sign-out"), Some(Exception::SignOut));
        assert_eq!(label("logout"), Some(Exception::SignOut));
        assert_eq!(label("Abmelden"), Some(Exception::SignOut));
        // Anything on a checkout or sign-out page, or leading to one.
        let on = |page, target| {
            exception(Judged {
                label: "Continue",
                page,
                target,
                ..Judged::default()
            })
        };
        assert_eq!(
            on("https://shop.example/checkout?step=2", ""),
            Some(Exception::Purchase)
        );
        assert_eq!(on("https://shop.example/account/logout", ""), Some(Exception::SignOut));
        assert_eq!(
            on(shop, "https://shop.example/account/logout"),
            Some(Exception::SignOut)
        );
        assert_eq!(on(shop, "https://shop.example/order"), Some(Exception::Purchase));
        assert_eq!(on("https://shop.example/paying-guests", ""), None);
        assert_eq!(on("https://checkout.example/cart", ""), None, "the path, not the host");
        // Any field of a form whose button buys: submitting it from a quantity field buys.
        let quantity = Judged {
            label: "Quantity",
            form: "Buy now",
            page: shop,
            target: "",
        };
        assert_eq!(exception(quantity), Some(Exception::Purchase));
    }

    #[test]
    fn an_offer_covers_the_profile_and_never_an_exception() {
        let origins = vec!["https://shop.example".to_owned()];
        let limits = TaskLimits::default();
        let offer = TaskOffer::for_action(&origins, None, limits).expect("offered");
        assert_eq!(offer.origins, origins);
        assert_eq!((offer.max_actions, offer.minutes), (TASK_MAX_ACTIONS, TASK_MINUTES));
        assert_eq!(offer.exceptions, vec![Exception::Purchase, Exception::SignOut]);
        assert_eq!(TaskOffer::for_action(&origins, Some(Exception::Purchase), limits), None);
        assert_eq!(TaskOffer::for_action(&[], None, limits), None);
    }

    #[test]
    fn origins_are_scheme_host_and_port() {
        assert_eq!(
            origin_of("https://Shop.Example/a?b#c").as_deref(),
            Some("https://shop.example")
        );
        assert_eq!(
            origin_of("https://shop.example:443/").as_deref(),
            Some("https://shop.example")
        );
        assert_eq!(
            origin_of("https://shop.example:8443/x").as_deref(),
            Some("https://shop.example:8443")
        );
        assert_eq!(origin_of("about:blank"), None);
        assert_eq!(origin_of("https://user@shop.example/"), None);
    }
}
