//! Authentication on HTTP: the host's [`Authenticator`] turns each request's credentials into the
//! trusted [`Context`] its calls run under; [`BearerTokens`] is the one most servers need.

use std::{collections::HashMap, fmt, future::Future, pin::Pin, sync::Arc};

use carmy_core::{Access, AccessError, Context};
use http::request::Parts;
use sha2::{Digest, Sha256};

/// Decides who is calling, per HTTP request, before anything reaches MCP.
///
/// It runs on every request to the MCP endpoint with the request's head (`parts`: method, URI,
/// headers, and any extensions an outer layer added) and `base`, the host context set with
/// [`McpServer::context`](crate::McpServer::context). What it returns **replaces** `base` for
/// that request's calls, so an authenticator decides whether the host's grants apply to
/// everyone (return `base` with a principal added, as [`BearerTokens`] does) or not (build a
/// fresh [`Context`]). An [`Unauthorized`] is answered `401` and the request never reaches a
/// tool. Idempotency keys are scoped by the returned principal.
///
/// ```
/// use carmy_core::{Access, AccessError, Context};
/// use carmy_mcp::{Authenticator, RequestParts as Parts, Unauthorized};
///
/// /// Trusts a header set by the reverse proxy in front (and only by it).
/// struct ProxyUser;
///
/// impl Authenticator for ProxyUser {
///     async fn authenticate(&self, parts: &Parts, base: Context) -> Result<Context, Unauthorized> {
///         let user = parts
///             .headers
///             .get("x-authenticated-user")
///             .and_then(|value| value.to_str().ok())
///             .ok_or_else(|| Unauthorized::new("no authenticated user"))?;
///         Ok(base.with_principal(user))
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an `Authenticator`",
    note = "implement `async fn authenticate(&self, parts: &Parts, base: Context) -> Result<Context, Unauthorized>`, or use `BearerTokens`"
)]
pub trait Authenticator: Send + Sync + 'static {
    /// The context for this request's calls, or why it is refused.
    fn authenticate(
        &self,
        parts: &Parts,
        base: Context,
    ) -> impl Future<Output = Result<Context, Unauthorized>> + Send;
}

/// A refused request: answered `401 Unauthorized` with a `WWW-Authenticate` challenge (or, as
/// made, `403` or `503`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unauthorized {
    pub(crate) reason: String,
    pub(crate) challenge: String,
    pub(crate) status: Refusal,
}

/// The status a refused request is answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `401`: no credentials, or bad ones.
    Unauthenticated,
    /// `403`: good credentials that do not allow this request.
    Forbidden,
    /// `503`: the credentials cannot be checked right now.
    Unavailable,
}

impl Unauthorized {
    /// Refuses with `reason` (sent to the client; say nothing secret) and a `Bearer` challenge:
    /// `401`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            challenge: r#"Bearer realm="mcp""#.into(),
            status: Refusal::Unauthenticated,
        }
    }

    /// Refuses a caller whose credentials are good but do not allow the request: `403`, with
    /// the [challenge](Self::challenge) saying what would (`error="insufficient_scope"`).
    pub fn forbidden(reason: impl Into<String>) -> Self {
        Self {
            status: Refusal::Forbidden,
            ..Self::new(reason)
        }
    }

    /// Refuses a request whose credentials cannot be checked right now (the authorization
    /// server is unreachable): `503` with `Retry-After`, so the client retries rather than
    /// throwing its credentials away.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self {
            status: Refusal::Unavailable,
            ..Self::new(reason)
        }
    }

    /// Replaces the `WWW-Authenticate` challenge.
    #[must_use]
    pub fn challenge(mut self, challenge: impl Into<String>) -> Self {
        self.challenge = challenge.into();
        self
    }

    /// Why the request was refused.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for Unauthorized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unauthorized: {}", self.reason)
    }
}

impl std::error::Error for Unauthorized {}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// [`Authenticator`] made object-safe, so the server can hold any one.
pub(crate) trait DynAuthenticator: Send + Sync + 'static {
    fn authenticate_boxed<'a>(
        &'a self,
        parts: &'a Parts,
        base: Context,
    ) -> BoxFuture<'a, Result<Context, Unauthorized>>;
}

impl<A: Authenticator> DynAuthenticator for A {
    fn authenticate_boxed<'a>(
        &'a self,
        parts: &'a Parts,
        base: Context,
    ) -> BoxFuture<'a, Result<Context, Unauthorized>> {
        Box::pin(Authenticator::authenticate(self, parts, base))
    }
}

/// Static bearer tokens, each naming a principal and its grants: `Authorization: Bearer <token>`.
///
/// The context of a request is the host's base context with the token's principal set and its
/// grants added. A grant written `allow:RULE` is an access rule instead ([`Access`]): a token
/// with any sees and uses only what they allow of the kinds they name (`allow:effect:read
/// allow:place_order`, `allow:resource:docs://*`), within what the base context allows. Tokens are kept only as SHA-256 digests and looked up by digest, so neither a
/// memory dump nor response timing gives one away.
///
/// ```
/// use carmy_mcp::BearerTokens;
///
/// let tokens = BearerTokens::parse(
///     "# token              principal  grants...\n\
///      s3cr3t-alice-token   alice      confirm:cancel_order\n\
///      s3cr3t-bob-token     bob\n\
///      s3cr3t-audit-token   auditor    allow:effect:read\n",
/// )?;
/// assert_eq!(tokens.len(), 3);
/// # Ok::<(), carmy_mcp::TokenFileError>(())
/// ```
#[derive(Clone, Default)]
pub struct BearerTokens {
    by_digest: HashMap<[u8; 32], Arc<Grant>>,
}

struct Grant {
    principal: Arc<str>,
    grants: Vec<Arc<str>>,
    /// The tools the token may see and call, when its line names any (`allow:RULE`).
    access: Option<Access>,
}

/// The prefix that makes a token file's grant an access rule.
const ALLOW: &str = "allow:";

impl fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the tokens, nor their digests.
        f.debug_struct("BearerTokens")
            .field("tokens", &self.by_digest.len())
            .finish()
    }
}

/// The shortest token accepted: anything shorter is guessable.
pub const MIN_TOKEN_LEN: usize = 16;

impl BearerTokens {
    /// No tokens yet: every request is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `token` as `principal` with `grants`.
    ///
    /// Grants written `allow:RULE` are access rules (see the type's documentation).
    ///
    /// # Panics
    /// If `token` is shorter than [`MIN_TOKEN_LEN`] bytes, or an `allow:` rule cannot be read;
    /// [`parse`](Self::parse) reports them instead.
    #[must_use]
    pub fn token<G: Into<Arc<str>>>(
        mut self,
        token: &str,
        principal: impl Into<Arc<str>>,
        grants: impl IntoIterator<Item = G>,
    ) -> Self {
        assert!(
            token.len() >= MIN_TOKEN_LEN,
            "a bearer token needs at least {MIN_TOKEN_LEN} bytes"
        );
        if let Err(error) = self.insert(token, principal.into(), grants.into_iter().map(Into::into))
        {
            panic!("{error}");
        }
        self
    }

    fn insert(
        &mut self,
        token: &str,
        principal: Arc<str>,
        grants: impl Iterator<Item = Arc<str>>,
    ) -> Result<(), AccessError> {
        let (rules, grants): (Vec<Arc<str>>, Vec<Arc<str>>) =
            grants.partition(|grant| grant.starts_with(ALLOW));
        let access = match rules.is_empty() {
            true => None,
            false => Some(Access::parse(
                rules.iter().map(|rule| &rule[ALLOW.len()..]),
            )?),
        };
        let grant = Grant {
            principal,
            grants,
            access,
        };
        self.by_digest.insert(digest(token), Arc::new(grant));
        Ok(())
    }

    /// Reads a token file: one `TOKEN PRINCIPAL [GRANT...]` per line, separated by whitespace;
    /// blank lines and lines starting with `#` are skipped.
    pub fn parse(text: &str) -> Result<Self, TokenFileError> {
        let mut tokens = Self::new();
        for (index, line) in text.lines().enumerate() {
            let line_number = index + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let token = fields.next().unwrap_or_default();
            let Some(principal) = fields.next() else {
                return Err(TokenFileError::NoPrincipal { line: line_number });
            };
            if token.len() < MIN_TOKEN_LEN {
                return Err(TokenFileError::ShortToken { line: line_number });
            }
            if tokens.by_digest.contains_key(&digest(token)) {
                return Err(TokenFileError::Duplicate { line: line_number });
            }
            tokens
                .insert(token, principal.into(), fields.map(Into::into))
                .map_err(|error| TokenFileError::BadRule {
                    line: line_number,
                    problem: error.to_string(),
                })?;
        }
        Ok(tokens)
    }

    /// How many tokens are accepted.
    pub fn len(&self) -> usize {
        self.by_digest.len()
    }

    /// Whether no token is accepted.
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }
}

impl Authenticator for BearerTokens {
    async fn authenticate(&self, parts: &Parts, base: Context) -> Result<Context, Unauthorized> {
        let token = bearer_token(parts).map_err(|missing| match missing {
            NoBearer::Missing => Unauthorized::new("a bearer token is required"),
            NoBearer::Malformed => Unauthorized::new(NOT_BEARER),
        })?;
        let grant = self.by_digest.get(&digest(token)).ok_or_else(|| {
            Unauthorized::new("invalid bearer token")
                .challenge(r#"Bearer realm="mcp", error="invalid_token""#)
        })?;
        let context = base
            .with_principal(grant.principal.clone())
            .with_grants(grant.grants.iter().cloned());
        Ok(match &grant.access {
            Some(access) => context.with_access(access.clone()),
            None => context,
        })
    }
}

/// Why a request carries no bearer token.
pub(crate) enum NoBearer {
    /// No `Authorization` header (or more than one).
    Missing,
    /// One that is not `Bearer <token>`.
    Malformed,
}

/// What a refusal of a [`NoBearer::Malformed`] header says.
pub(crate) const NOT_BEARER: &str = "the Authorization header is not `Bearer <token>`";

/// The token of the request's one `Authorization: Bearer <token>` header.
pub(crate) fn bearer_token(parts: &Parts) -> Result<&str, NoBearer> {
    let mut values = parts.headers.get_all(http::header::AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return Err(NoBearer::Missing);
    };
    value
        .to_str()
        .ok()
        .and_then(|value| {
            let (scheme, token) = value.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .ok_or(NoBearer::Malformed)
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// A token file that cannot be used; no line's content is repeated, it may be a secret.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenFileError {
    /// A line has a token but no principal.
    #[error("line {line}: expected `TOKEN PRINCIPAL [GRANT...]`")]
    NoPrincipal {
        /// 1-based.
        line: usize,
    },
    /// A token is too short to be safe.
    #[error("line {line}: the token is shorter than {MIN_TOKEN_LEN} bytes")]
    ShortToken {
        /// 1-based.
        line: usize,
    },
    /// The same token twice.
    #[error("line {line}: this token is already listed")]
    Duplicate {
        /// 1-based.
        line: usize,
    },
    /// An `allow:` access rule that cannot be read.
    #[error("line {line}: access rule {problem}")]
    BadRule {
        /// 1-based.
        line: usize,
        /// The rule and what is wrong with it.
        problem: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(authorization: Option<&str>) -> Parts {
        let mut request = http::Request::builder().uri("/mcp");
        if let Some(value) = authorization {
            request = request.header(http::header::AUTHORIZATION, value);
        }
        request.body(()).expect("a request").into_parts().0
    }

    fn tokens() -> BearerTokens {
        BearerTokens::parse("# comment\n\nalice-token-0123456789 alice confirm:x read\n")
            .expect("parses")
    }

    #[tokio::test]
    async fn a_known_token_extends_the_base_context() {
        let base = Context::new().with_grant("host-grant");
        let context = tokens()
            .authenticate(&parts(Some("Bearer alice-token-0123456789")), base)
            .await
            .expect("accepted");
        assert_eq!(context.principal(), Some("alice"));
        let grants: Vec<&str> = context.grants().map(carmy_core::Grant::as_str).collect();
        assert_eq!(grants, ["confirm:x", "host-grant", "read"]);
    }

    #[tokio::test]
    async fn missing_wrong_and_malformed_credentials_are_refused() {
        for header in [
            None,
            Some("Bearer wrong-token-0123456789"),
            Some("Basic YWxpY2U6cHc="),
            Some("alice-token-0123456789"),
        ] {
            let refused = tokens()
                .authenticate(&parts(header), Context::new())
                .await
                .expect_err("refused");
            assert!(refused.challenge.starts_with("Bearer"), "{header:?}");
        }
    }

    #[test]
    fn bad_token_files_say_which_line() {
        assert_eq!(
            BearerTokens::parse("abcdefghijklmnopq\n").unwrap_err(),
            TokenFileError::NoPrincipal { line: 1 }
        );
        assert_eq!(
            BearerTokens::parse("\nshort alice\n").unwrap_err(),
            TokenFileError::ShortToken { line: 2 }
        );
        assert_eq!(
            BearerTokens::parse("abcdefghijklmnopq a\nabcdefghijklmnopq b\n").unwrap_err(),
            TokenFileError::Duplicate { line: 2 }
        );
    }

    #[tokio::test]
    async fn allow_rules_restrict_the_token_s_tools_and_are_not_grants() {
        let tokens = BearerTokens::parse(
            "audit-token-0123456789 auditor allow:effect:read allow:place_order confirm:x\n",
        )
        .expect("parses");
        let context = tokens
            .authenticate(
                &parts(Some("Bearer audit-token-0123456789")),
                Context::new(),
            )
            .await
            .expect("accepted");
        assert!(context.is_restricted());
        let grants: Vec<&str> = context.grants().map(carmy_core::Grant::as_str).collect();
        assert_eq!(grants, ["confirm:x"]);
        assert_eq!(
            BearerTokens::parse("\nabcdefghijklmnopq a allow:effect:all\n").unwrap_err(),
            TokenFileError::BadRule {
                line: 2,
                problem: "`effect:all`: unknown effect `all`; expected none, read, write, \
                          destructive or external_write"
                    .to_owned()
            }
        );
        let plain = tokens_context().await;
        assert!(!plain.is_restricted());
    }

    async fn tokens_context() -> Context {
        tokens()
            .authenticate(
                &parts(Some("Bearer alice-token-0123456789")),
                Context::new(),
            )
            .await
            .expect("accepted")
    }

    #[test]
    fn debug_shows_no_token() {
        assert_eq!(format!("{:?}", tokens()), "BearerTokens { tokens: 1 }");
    }
}
