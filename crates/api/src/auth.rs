//! Static bearer authentication and per-route scope checks.
//!
//! The presented token is compared with the configured one through their SHA-256 digests in
//! constant time, so neither the content nor the length of the token leaks through timing.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use domain::ErrorCode;
use domain::ids::PrincipalId;
use domain::scope::{Scope, ScopeSet};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::problem::ApiError;

/// Knows the token digest and the scopes it grants.
pub struct Authenticator {
    token_digest: [u8; 32],
    scopes: ScopeSet,
    principal: PrincipalId,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("scopes", &self.scopes)
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

/// The authenticated caller, available to handlers as a request extension.
#[derive(Clone, Debug)]
pub struct Caller {
    pub principal: PrincipalId,
}

impl Authenticator {
    pub fn new(token: &[u8], scopes: ScopeSet, principal: PrincipalId) -> Authenticator {
        Authenticator {
            token_digest: Sha256::digest(token).into(),
            scopes,
            principal,
        }
    }

    pub fn principal(&self) -> &PrincipalId {
        &self.principal
    }

    pub fn scopes(&self) -> &ScopeSet {
        &self.scopes
    }

    fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, ApiError> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(unauthenticated(None, "an Authorization: Bearer token is required"));
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|text| text.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let Some(token) = token.filter(|token| !token.is_empty()) else {
            return Err(unauthenticated(
                Some("invalid_request"),
                "the Authorization header must use the Bearer scheme",
            ));
        };
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if presented.ct_eq(&self.token_digest).unwrap_u8() != 1 {
            return Err(unauthenticated(Some("invalid_token"), "the bearer token is not valid"));
        }
        Ok(Caller {
            principal: self.principal.clone(),
        })
    }
}

fn unauthenticated(error: Option<&str>, detail: &str) -> ApiError {
    let challenge = match error {
        Some(error) => format!("Bearer realm=\"steward\", error=\"{error}\""),
        None => "Bearer realm=\"steward\"".to_owned(),
    };
    ApiError::new(ErrorCode::Unauthenticated).detail(detail).header(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(&challenge).unwrap_or(HeaderValue::from_static("Bearer")),
    )
}

/// What one route requires of its caller.
#[derive(Clone, Debug)]
pub struct Guard {
    pub authenticator: std::sync::Arc<Authenticator>,
    pub scope: Scope,
}

/// Middleware: 401 without a valid token, 403 when the token lacks the route's scope.
pub async fn require(State(guard): State<Guard>, mut request: Request, next: Next) -> Result<Response, ApiError> {
    let caller = guard.authenticator.authenticate(request.headers())?;
    if !guard.authenticator.scopes.contains(guard.scope) {
        let challenge = format!(
            "Bearer realm=\"steward\", error=\"insufficient_scope\", scope=\"{}\"",
            guard.scope
        );
        return Err(ApiError::new(ErrorCode::InsufficientScope)
            .detail(format!("this operation requires the `{}` scope", guard.scope))
            .required_scope(guard.scope)
            .header(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_str(&challenge).unwrap_or(HeaderValue::from_static("Bearer")),
            ));
    }
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}
