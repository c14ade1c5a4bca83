//! The public site: a home page naming the deployment, its privacy policy and terms, and
//! `release.txt`, served without authentication under the path of `SITE_URL` (default
//! `/site/`), and `release.txt` again under the path of `DOCS_URL` (default `/docs/`). The mail
//! provider's app verification reads them (`site/README.md`).
//!
//! The pages are the operator's templates (`SITE_TEMPLATES_DIR`, each file replacing its
//! default from `site/`), rendered once at start with HTML-escaped values; an unknown
//! placeholder is refused then, never shown. They are static HTML under the web client's
//! Content-Security-Policy (set for every answer by `web::secure`): no script, nothing from
//! another origin.

use std::path::{Path, PathBuf};

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use domain::env::{Env, EnvError, invalid};
use domain::site::{DEFAULT_DOCS_PATH, DEFAULT_SITE_PATH, PublicUrl};

/// The largest template file read.
const MAX_TEMPLATE_BYTES: u64 = 256 * 1024;

/// A page's file, and where it is served below the site's path.
struct Page {
    file: &'static str,
    route: &'static str,
    default: &'static str,
}

const PAGES: [Page; 3] = [
    Page {
        file: "home.html",
        route: "",
        default: include_str!("../../../site/home.html"),
    },
    Page {
        file: "privacy.html",
        route: "privacy",
        default: include_str!("../../../site/privacy.html"),
    },
    Page {
        file: "tos.html",
        route: "tos",
        default: include_str!("../../../site/tos.html"),
    },
];
const STYLESHEET: &str = "site.css";
const DEFAULT_STYLESHEET: &str = include_str!("../../../site/site.css");

/// The site's configuration, its templates read and checked.
#[derive(Clone, Debug)]
pub struct SiteSettings {
    /// `SITE_URL`, when set.
    pub site_url: Option<PublicUrl>,
    /// `DOCS_URL`, when set.
    pub docs_url: Option<PublicUrl>,
    deployment: String,
    operator: String,
    contact: String,
    /// The pages' templates, in [`PAGES`] order, and the stylesheet.
    pages: Vec<String>,
    stylesheet: String,
}

impl SiteSettings {
    /// Reads `SITE_URL`, `DOCS_URL`, `SITE_NAME`, `SITE_OPERATOR`, `SITE_CONTACT` and the
    /// templates of `SITE_TEMPLATES_DIR`.
    pub fn from_env(env: &Env) -> Result<SiteSettings, EnvError> {
        let address = |name: &'static str| -> Result<Option<PublicUrl>, EnvError> {
            env.get(name)
                .map(|text| PublicUrl::parse(&text).map_err(|reason| invalid(name, reason)))
                .transpose()
        };
        let text = |name: &'static str, default: &str| -> Result<String, EnvError> {
            let value = env.get(name).unwrap_or_else(|| default.to_owned());
            if value.chars().count() > 200 || value.chars().any(char::is_control) {
                return Err(invalid(name, "must be one line of at most 200 characters"));
            }
            Ok(value)
        };
        let templates = env.get("SITE_TEMPLATES_DIR").map(PathBuf::from);
        let mut pages = Vec::with_capacity(PAGES.len());
        for page in &PAGES {
            pages.push(template(templates.as_deref(), page.file, page.default)?);
        }
        let settings = SiteSettings {
            site_url: address("SITE_URL")?,
            docs_url: address("DOCS_URL")?,
            deployment: text("SITE_NAME", "Steward")?,
            operator: text("SITE_OPERATOR", "its owner")?,
            contact: text("SITE_CONTACT", "the operator of this deployment")?,
            pages,
            stylesheet: template(templates.as_deref(), STYLESHEET, DEFAULT_STYLESHEET)?,
        };
        // Every placeholder is known now, or the role stops here.
        for (page, template) in PAGES.iter().zip(&settings.pages) {
            settings
                .render(template, "release")
                .map_err(|reason| invalid("SITE_TEMPLATES_DIR", format!("{}: {reason}", page.file)))?;
        }
        Ok(settings)
    }

    /// Where the site is served.
    pub fn site_path(&self) -> &str {
        self.site_url.as_ref().map_or(DEFAULT_SITE_PATH, PublicUrl::path)
    }

    /// Where the documentation's `release.txt` is served.
    pub fn docs_path(&self) -> &str {
        self.docs_url.as_ref().map_or(DEFAULT_DOCS_PATH, PublicUrl::path)
    }

    fn render(&self, template: &str, release: &str) -> Result<String, String> {
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after.find("}}").ok_or("a `{{` is never closed")?;
            let name = after[..end].trim();
            let value = match name {
                "deployment" => &self.deployment,
                "operator" => &self.operator,
                "contact" => &self.contact,
                "release" => release,
                other => {
                    return Err(format!(
                        "unknown placeholder `{{{{{other}}}}}` (known: deployment, operator, contact, release)"
                    ));
                }
            };
            out.push_str(&escape(value));
            rest = &after[end + 2..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// The operator's `file` in `directory` when it is there, else `default`.
fn template(directory: Option<&Path>, file: &str, default: &str) -> Result<String, EnvError> {
    let Some(directory) = directory else {
        return Ok(default.to_owned());
    };
    let refuse = |reason: String| invalid("SITE_TEMPLATES_DIR", reason);
    if !directory.is_absolute() {
        return Err(refuse(format!("`{}` is not an absolute path", directory.display())));
    }
    let meta = std::fs::metadata(directory).map_err(|error| refuse(format!("{}: {error}", directory.display())))?;
    if !meta.is_dir() {
        return Err(refuse(format!("{} is not a directory", directory.display())));
    }
    let path = directory.join(file);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(default.to_owned()),
        Err(error) => return Err(refuse(format!("{}: {error}", path.display()))),
    };
    if !meta.is_file() {
        return Err(refuse(format!("{} is not a regular file", path.display())));
    }
    if meta.len() > MAX_TEMPLATE_BYTES {
        return Err(refuse(format!("{} is over 256 KiB", path.display())));
    }
    let bytes = std::fs::read(&path).map_err(|error| refuse(format!("{}: {error}", path.display())))?;
    String::from_utf8(bytes).map_err(|_| refuse(format!("{} is not UTF-8", path.display())))
}

fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for character in value.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

fn answer(content_type: &'static str, body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            // Revalidated, so an edited template shows after the next restart.
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

/// The site's routes, for `release`.
pub fn router(settings: &SiteSettings, release: &str) -> Router {
    let site = settings.site_path().to_owned();
    let mut router = Router::new();
    for (page, template) in PAGES.iter().zip(&settings.pages) {
        // Checked at start (`from_env`): a template that cannot render never gets here.
        let html = settings.render(template, release).unwrap_or_default();
        router = router.route(
            &format!("{site}{}", page.route),
            get(move || async move { answer("text/html; charset=utf-8", html) }),
        );
    }
    let stylesheet = settings.stylesheet.clone();
    let release_txt = format!("{release}\n");
    let docs_release = release_txt.clone();
    router = router
        .route(
            &format!("{site}{STYLESHEET}"),
            get(move || async move { answer("text/css; charset=utf-8", stylesheet) }),
        )
        .route(
            &format!("{site}release.txt"),
            get(move || async move { answer("text/plain; charset=utf-8", release_txt) }),
        );
    // `/site` without its slash: the relative links would miss, so the page is one redirect away.
    let bare = site.trim_end_matches('/').to_owned();
    let target = site.clone();
    router = router.route(&bare, get(move || async move { Redirect::permanent(&target) }));
    let docs = settings.docs_path();
    if docs != site {
        router = router.route(
            &format!("{docs}release.txt"),
            get(move || async move { answer("text/plain; charset=utf-8", docs_release) }),
        );
    }
    router
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<SiteSettings, EnvError> {
        let lookup = |name: &str| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        };
        SiteSettings::from_env(&Env::new(&lookup))
    }

    #[test]
    fn values_are_escaped_and_unknown_placeholders_refused() {
        let site = settings(&[("SITE_NAME", "Ada's <Steward>")]).expect("valid");
        assert_eq!(
            site.render("<h1>{{deployment}}</h1> {{ release }}", "0.1.0+abc")
                .expect("render"),
            "<h1>Ada&#39;s &lt;Steward&gt;</h1> 0.1.0+abc"
        );
        assert!(
            site.render("{{name}}", "r")
                .expect_err("unknown")
                .contains("unknown placeholder `{{name}}`")
        );
        assert!(
            site.render("{{deployment", "r")
                .expect_err("open")
                .contains("never closed")
        );
    }

    #[test]
    fn the_defaults_render_and_take_nothing_from_another_origin() {
        let site = settings(&[]).expect("defaults");
        assert_eq!((site.site_path(), site.docs_path()), ("/site/", "/docs/"));
        for (page, template) in PAGES.iter().zip(&site.pages) {
            let html = site.render(template, "0.1.0+abc").expect(page.file);
            for reference in [
                "src=\"http",
                "href=\"http",
                "href=\"//",
                "src=\"//",
                "<script",
                "style=",
            ] {
                assert!(!html.contains(reference), "{}: {reference}", page.file);
            }
        }
        assert!(
            site.pages[0].contains("href=\"privacy\""),
            "the home page links to its privacy policy"
        );
    }

    #[test]
    fn an_operators_template_replaces_its_default_and_is_checked() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("home.html"), "<p>{{operator}} runs {{deployment}}</p>").expect("write");
        let path = dir.path().display().to_string();
        let site = settings(&[("SITE_TEMPLATES_DIR", &path), ("SITE_OPERATOR", "Ada")]).expect("valid");
        assert_eq!(
            site.render(&site.pages[0], "r").expect("render"),
            "<p>Ada runs Steward</p>"
        );
        assert_eq!(site.pages[1], PAGES[1].default, "the others keep their defaults");

        std::fs::write(dir.path().join("tos.html"), "{{terms}}").expect("write");
        let error = settings(&[("SITE_TEMPLATES_DIR", &path)]).expect_err("unknown placeholder");
        assert!(
            error.to_string().contains("tos.html: unknown placeholder `{{terms}}`"),
            "{error}"
        );
        let error = settings(&[("SITE_TEMPLATES_DIR", "site")]).expect_err("relative");
        assert!(error.to_string().contains("not an absolute path"), "{error}");
        let error = settings(&[("SITE_URL", "https://steward.example/")]).expect_err("root");
        assert!(error.to_string().starts_with("SITE_URL is invalid"), "{error}");
    }
}
