//! An OAuth 2.1 resource server: the [`Authenticator`] for HTTP servers whose callers bring
//! JWT access tokens from an authorization server, as MCP's authorization specification has
//! them. `keys.rs` fetches and caches the issuer's signing keys, `scopes.rs` turns a token's
//! scopes into grants and access rules, `metadata.rs` is the protected resource metadata
//! (RFC 9728) and the challenges that point clients to it.

mod keys;
mod metadata;
mod scopes;

use std::{fmt, sync::Arc, time::Duration};

use carmy_core::Context;
use http::request::Parts;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;

use self::{
    keys::{KeyError, Keys},
    metadata::Resource,
    scopes::{ScopeMap, TokenScopes},
};
use super::auth::{Authenticator, NOT_BEARER, NoBearer, Unauthorized, bearer_token};

pub(crate) use self::{metadata::METADATA_PATH, scopes::StepUp};

/// Accepts JWT access tokens issued for this server: `Authorization: Bearer <JWT>`.
///
/// A token is accepted when it is signed by one of the issuer's keys (its JWKS, fetched over
/// HTTPS and cached; a token naming a key not yet seen refetches them, so rotated keys are
/// picked up), with an asymmetric algorithm (never `none` nor a shared secret), by the
/// configured issuer (`iss`), for this server (`aud` names the [resource](Self::new) or the
/// [audience](Self::audience), RFC 8707), unexpired (`exp`, `nbf`, a minute of leeway), and
/// names its subject (`sub`), which becomes the calls' principal. Its scopes (`scope`, or
/// `scp`) give what the [scope map](Self::scope) says.
///
/// Served with [`HttpServer::oauth`](crate::HttpServer::oauth), which also publishes the
/// protected resource metadata (RFC 9728) clients discover the issuer from: a request without
/// a valid token gets `401` and `WWW-Authenticate: Bearer resource_metadata="…"`, one lacking a
/// [required scope](Self::required_scopes) `403` with `error="insufficient_scope"`, and so does
/// a call of a tool that only another scope allows (step-up: the client asks for that scope).
///
/// ```
/// use carmy_mcp::OAuth;
///
/// let oauth = OAuth::new("https://auth.example.com", "https://mcp.example.com/mcp")?
///     .scope("shop:read", ["allow:effect:read"])?
///     .scope("shop:orders", ["allow:place_order", "allow:cancel_order", "confirm:cancel_order"])?;
/// # Ok::<(), carmy_mcp::OAuthError>(())
/// ```
#[derive(Clone)]
#[must_use]
pub struct OAuth {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: String,
    resource: Resource,
    audience: String,
    keys: Keys,
    scopes: ScopeMap,
    required_scopes: Vec<String>,
    leeway: Duration,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("issuer", &self.inner.issuer)
            .field("resource", &self.inner.resource.uri())
            .field("audience", &self.inner.audience)
            .field("scopes", &self.inner.scopes.names().collect::<Vec<_>>())
            .field("required_scopes", &self.inner.required_scopes)
            .finish_non_exhaustive()
    }
}

/// An OAuth configuration that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthError {
    /// A URL that is not absolute, or not `https` (plain `http` is for loopback hosts only).
    #[error("{what} `{url}`: {problem}")]
    Url {
        /// Which URL: `issuer`, `resource` or `jwks_uri`.
        what: &'static str,
        /// As given.
        url: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A scope's `allow:` rule that cannot be read.
    #[error("scope `{scope}`: access rule {problem}")]
    Rule {
        /// The scope.
        scope: String,
        /// The rule and what is wrong with it.
        problem: String,
    },
    /// A scope name with characters RFC 6749 does not allow (space, `"`, `\`, controls).
    #[error("scope `{0}`: not a valid scope name")]
    ScopeName(String),
}

/// How long fetched keys are trusted before they are fetched again.
pub const DEFAULT_KEYS_MAX_AGE: Duration = Duration::from_secs(600);

/// The clock skew allowed on `exp` and `nbf`.
const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);

/// The signature algorithms accepted: the asymmetric ones only, so that neither `none` nor a
/// public key taken for an HMAC secret ever verifies.
const ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

impl OAuth {
    /// Tokens of `issuer` (its URL, exactly as the tokens' `iss` says) for `resource`: this
    /// server's MCP endpoint as clients reach it (`https://mcp.example.com/mcp`), which is the
    /// audience tokens must name and where the metadata says the resource is. The issuer's
    /// keys are found through its metadata (RFC 8414, then OpenID Connect discovery) unless
    /// [`jwks_uri`](Self::jwks_uri) names them. Both URLs must be `https`, or `http` on a
    /// loopback host.
    pub fn new(issuer: &str, resource: &str) -> Result<Self, OAuthError> {
        let issuer_url = metadata::checked_url("issuer", issuer)?;
        let resource = Resource::new(resource)?;
        Ok(Self {
            inner: Arc::new(Inner {
                issuer: issuer.to_owned(),
                audience: resource.uri().to_owned(),
                resource,
                keys: Keys::discovered(issuer_url, DEFAULT_KEYS_MAX_AGE),
                scopes: ScopeMap::default(),
                required_scopes: Vec::new(),
                leeway: DEFAULT_LEEWAY,
            }),
        })
    }

    /// Where the issuer publishes its keys (a JWKS), instead of finding it in its metadata.
    pub fn jwks_uri(self, uri: &str) -> Result<Self, OAuthError> {
        let url = metadata::checked_url("jwks_uri", uri)?;
        let max_age = self.inner.keys.max_age();
        Ok(self.map(|inner| inner.keys = Keys::at(url, max_age)))
    }

    /// The audience tokens must name, when the issuer uses another identifier than the
    /// resource URL for this server (an API identifier).
    pub fn audience(self, audience: impl Into<String>) -> Self {
        let audience = audience.into();
        self.map(|inner| inner.audience = audience)
    }

    /// What the scope `name` gives: grants (`confirm:cancel_order`) and access rules
    /// (`allow:effect:read`, `allow:orders.*`, `allow:resource:docs://*`; see
    /// [`Access`](carmy_core::Access)). Once any scope has a rule of a kind (tools, resources,
    /// prompts), a token sees and uses only what its scopes allow of that kind; kinds no scope
    /// has a rule for are not restricted.
    pub fn scope<I, S>(self, name: &str, gives: I) -> Result<Self, OAuthError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut this = self;
        this.inner_mut().scopes.insert(name, gives)?;
        Ok(this)
    }

    /// Scopes every token must have: one lacking any is refused `403 insufficient_scope`.
    pub fn required_scopes<I, S>(self, scopes: I) -> Result<Self, OAuthError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let scopes = scopes
            .into_iter()
            .map(Into::into)
            .map(|scope: String| match scopes::valid_name(&scope) {
                true => Ok(scope),
                false => Err(OAuthError::ScopeName(scope)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.map(|inner| inner.required_scopes = scopes))
    }

    /// How long fetched keys are used before they are fetched again (default 10 minutes). A
    /// token signed by a key not among them refetches sooner, at most every few seconds.
    pub fn keys_max_age(self, max_age: Duration) -> Self {
        self.map(|inner| inner.keys.set_max_age(max_age))
    }

    /// The resource this server is (its MCP endpoint's URL).
    pub fn resource(&self) -> &str {
        self.inner.resource.uri()
    }

    /// The protected resource metadata document (RFC 9728).
    pub fn metadata(&self) -> serde_json::Value {
        let inner = &self.inner;
        let mut scopes: Vec<&str> = inner.required_scopes.iter().map(String::as_str).collect();
        for name in inner.scopes.names() {
            if !scopes.contains(&name) {
                scopes.push(name);
            }
        }
        inner.resource.document(&inner.issuer, &scopes)
    }

    /// Where [`metadata`](Self::metadata) is served, as a path on this server (RFC 9728's
    /// well-known path, the resource's path appended).
    pub fn metadata_path(&self) -> &str {
        self.inner.resource.metadata_path()
    }

    fn map(mut self, change: impl FnOnce(&mut Inner)) -> Self {
        change(self.inner_mut());
        self
    }

    fn inner_mut(&mut self) -> &mut Inner {
        Arc::get_mut(&mut self.inner).expect("an OAuth is configured before it is shared")
    }

    /// The `401` of a request without a valid token.
    fn unauthorized(&self, reason: &str, invalid_token: bool) -> Unauthorized {
        let challenge = self.inner.resource.challenge(
            invalid_token.then_some(("invalid_token", reason)),
            &self.inner.required_scopes,
        );
        Unauthorized::new(reason).challenge(challenge)
    }

    /// The token's subject and scopes, once it holds.
    async fn verify(&self, token: &str) -> Result<(String, Vec<String>), Unauthorized> {
        let inner = &self.inner;
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| self.unauthorized("the access token is not a signed JWT", true))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(self.unauthorized("the access token's algorithm is not accepted", true));
        }
        let key = match inner.keys.key(header.kid.as_deref(), header.alg).await {
            Ok(key) => key,
            Err(KeyError::Unavailable(problem)) => {
                tracing::warn!(%problem, "the issuer's keys cannot be fetched");
                return Err(Unauthorized::unavailable(
                    "the authorization server's keys cannot be fetched; try again shortly",
                ));
            }
            Err(KeyError::Unknown) => {
                return Err(self.unauthorized(
                    "the access token is signed by a key the issuer does not publish",
                    true,
                ));
            }
        };
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&inner.issuer]);
        validation.set_audience(&[&inner.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = inner.leeway.as_secs();
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|error| {
            use jsonwebtoken::errors::ErrorKind;
            let reason = match error.kind() {
                ErrorKind::ExpiredSignature => "the access token has expired",
                ErrorKind::ImmatureSignature => "the access token is not valid yet",
                ErrorKind::InvalidAudience => "the access token is not for this server",
                ErrorKind::InvalidIssuer => "the access token is from another issuer",
                ErrorKind::InvalidSignature => "the access token's signature is wrong",
                ErrorKind::MissingRequiredClaim(_) => LACKS_A_CLAIM,
                _ => "the access token is invalid",
            };
            self.unauthorized(reason, true)
        })?;
        let scopes = data.claims.scopes();
        match data.claims.sub {
            Some(subject) if !subject.is_empty() => Ok((subject, scopes)),
            _ => Err(self.unauthorized(LACKS_A_CLAIM, true)),
        }
    }
}

const LACKS_A_CLAIM: &str = "the access token lacks a claim (exp, iss, aud, sub)";

/// The claims read from an access token (RFC 9068); the registered ones are checked by
/// jsonwebtoken's validation.
#[derive(Deserialize)]
struct Claims {
    /// Required; checked here, as jsonwebtoken checks only the presence of the claims it
    /// validates itself.
    #[serde(default)]
    sub: Option<String>,
    /// Space-separated (RFC 8693, RFC 9068).
    #[serde(default)]
    scope: Option<String>,
    /// An array (or a string) of scopes, as some issuers write them instead.
    #[serde(default)]
    scp: Option<Scp>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Scp {
    One(String),
    Many(Vec<String>),
}

impl Claims {
    fn scopes(&self) -> Vec<String> {
        let mut scopes: Vec<String> = self
            .scope
            .iter()
            .flat_map(|scope| scope.split_ascii_whitespace())
            .map(str::to_owned)
            .collect();
        match &self.scp {
            Some(Scp::One(scope)) => {
                scopes.extend(scope.split_ascii_whitespace().map(str::to_owned))
            }
            Some(Scp::Many(many)) => scopes.extend(many.iter().cloned()),
            None => {}
        }
        scopes.sort();
        scopes.dedup();
        scopes
    }
}

impl Authenticator for OAuth {
    async fn authenticate(&self, parts: &Parts, base: Context) -> Result<Context, Unauthorized> {
        let token = bearer_token(parts).map_err(|missing| match missing {
            NoBearer::Missing => self.unauthorized("an access token is required", false),
            NoBearer::Malformed => self.unauthorized(NOT_BEARER, true),
        })?;
        let (subject, granted) = self.verify(token).await?;
        let inner = &self.inner;
        let missing: Vec<&str> = inner
            .required_scopes
            .iter()
            .filter(|scope| !granted.contains(scope))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            let needed: Vec<String> = granted
                .iter()
                .map(String::as_str)
                .chain(missing.iter().copied())
                .map(str::to_owned)
                .collect();
            let reason = format!("the access token lacks the scope {}", missing.join(" "));
            return Err(Unauthorized::forbidden(&reason)
                .challenge(inner.resource.insufficient_scope(&needed, &reason)));
        }
        let scoped = TokenScopes::new(granted, &inner.scopes);
        let mut context = base
            .clone()
            .with_principal(subject)
            .with_grants(scoped.grants());
        if let Some(access) = scoped.access() {
            context = context.with_access(access);
        }
        Ok(context.with_extension(StepUp::new(
            base,
            scoped,
            inner.scopes.clone(),
            inner.resource.clone(),
        )))
    }
}
