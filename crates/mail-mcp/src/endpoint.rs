//! Provider endpoints receive client secrets, authorization codes, refresh tokens and bearer
//! tokens: each must be HTTPS, or plain HTTP to this machine (the tests' local provider), with
//! no user information or fragment.

use std::net::IpAddr;

use reqwest::Url;

/// `url` parsed, when it is fit to receive credentials; otherwise why not.
pub fn checked(url: &str) -> Result<Url, &'static str> {
    let parsed = Url::parse(url).map_err(|_| "it is not an absolute URL")?;
    let loopback = match parsed.host_str() {
        Some("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    };
    match parsed.scheme() {
        "https" if parsed.host_str().is_some() => {}
        "http" if loopback => {}
        _ => return Err("it must be https (plain http only to a loopback address)"),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() || parsed.fragment().is_some() {
        return Err("it must hold no user information or fragment");
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http_without_credentials() {
        for good in [
            "https://gmail.googleapis.com",
            "https://oauth2.googleapis.com/token",
            "http://127.0.0.1:8080/token",
            "http://[::1]:9/x",
            "http://localhost:1",
        ] {
            assert!(checked(good).is_ok(), "{good}");
        }
        for bad in [
            "gmail.googleapis.com",
            "http://gmail.googleapis.com",
            "http://10.0.0.1/token",
            "ftp://127.0.0.1/",
            "https://user:pass@gmail.googleapis.com",
            "https://gmail.googleapis.com/#fragment",
            "file:///etc/passwd",
        ] {
            assert!(checked(bad).is_err(), "{bad}");
        }
    }
}
