//! The issuer's signing keys: its JWKS, found through its metadata (RFC 8414, then OpenID
//! Connect discovery) or at a configured URL, fetched over HTTPS, cached for a while, and
//! fetched again early when a token names a key not among them (the issuer rotated its keys),
//! at most once every few seconds however many such tokens come.

use std::{
    str::FromStr,
    sync::{Arc, RwLock},
    time::Duration,
};

use jsonwebtoken::{
    Algorithm, DecodingKey,
    jwk::{Jwk, PublicKeyUse},
};
use reqwest::Url;
use serde::Deserialize;
use tokio::{sync::Mutex, time::Instant};

use super::metadata::checked_url;

/// The shortest time between two fetches of the keys: a flood of tokens naming unknown keys
/// costs the issuer one request per interval, not one per token.
const MIN_REFETCH: Duration = Duration::from_secs(5);
/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest metadata or JWKS document read.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// Why no key verifies a token.
#[derive(Debug)]
pub(super) enum KeyError {
    /// The issuer publishes no key of that id usable with that algorithm.
    Unknown,
    /// The keys cannot be fetched, and none cached fits.
    Unavailable(String),
}

pub(super) struct Keys {
    source: Source,
    max_age: Duration,
    client: std::sync::OnceLock<Result<reqwest::Client, String>>,
    cached: RwLock<Cached>,
    /// Held by the one task fetching; the others wait for its result.
    fetching: Mutex<Fetching>,
}

enum Source {
    /// The issuer's URL: its metadata names the JWKS.
    Discover(Url),
    Jwks(Url),
}

#[derive(Default)]
struct Cached {
    keys: Arc<[Key]>,
    /// When they were fetched; `None` before the first fetch.
    at: Option<Instant>,
}

#[derive(Default)]
struct Fetching {
    /// When the last fetch was tried, successful or not.
    tried: Option<Instant>,
    /// Why it failed, if it did.
    failure: Option<String>,
    /// The JWKS URL, once discovered.
    jwks: Option<Url>,
}

struct Key {
    id: Option<String>,
    /// The algorithm the key is for, when the JWKS says.
    algorithm: Option<Algorithm>,
    key: Arc<DecodingKey>,
}

impl Keys {
    pub(super) fn discovered(issuer: Url, max_age: Duration) -> Self {
        Self::new(Source::Discover(issuer), max_age)
    }

    pub(super) fn at(jwks: Url, max_age: Duration) -> Self {
        Self::new(Source::Jwks(jwks), max_age)
    }

    fn new(source: Source, max_age: Duration) -> Self {
        Self {
            source,
            max_age,
            client: std::sync::OnceLock::new(),
            cached: RwLock::default(),
            fetching: Mutex::default(),
        }
    }

    pub(super) fn max_age(&self) -> Duration {
        self.max_age
    }

    pub(super) fn set_max_age(&mut self, max_age: Duration) {
        self.max_age = max_age;
    }

    /// The key that verifies a token whose header names `id` (or none) and `algorithm`.
    pub(super) async fn key(
        &self,
        id: Option<&str>,
        algorithm: Algorithm,
    ) -> Result<Arc<DecodingKey>, KeyError> {
        let seen = {
            let cached = self.cached.read().expect("keys lock");
            let fresh = cached.at.is_some_and(|at| at.elapsed() < self.max_age);
            if fresh && let Some(key) = find(&cached.keys, id, algorithm) {
                return Ok(key);
            }
            cached.at
        };
        let mut fetching = self.fetching.lock().await;
        // Another task may have fetched them while this one waited.
        {
            let cached = self.cached.read().expect("keys lock");
            if cached.at != seen
                && let Some(key) = find(&cached.keys, id, algorithm)
            {
                return Ok(key);
            }
        }
        // Tried a moment ago (whatever came of it): not again yet, or an unreachable issuer
        // would hold every request for a fetch's timeout in turn.
        let recently = fetching
            .tried
            .is_some_and(|tried| tried.elapsed() < MIN_REFETCH);
        if !recently {
            fetching.tried = Some(Instant::now());
            match self.fetch(&mut fetching).await {
                Ok(keys) => {
                    tracing::debug!(keys = keys.len(), "fetched the issuer's keys");
                    fetching.failure = None;
                    *self.cached.write().expect("keys lock") = Cached {
                        keys: keys.into(),
                        at: Some(Instant::now()),
                    };
                }
                Err(problem) => fetching.failure = Some(problem),
            }
        }
        // Keys fetched earlier still verify the tokens they signed while the issuer is
        // unreachable.
        self.cached_key(id, algorithm)
            .ok_or_else(|| match &fetching.failure {
                Some(problem) => KeyError::Unavailable(problem.clone()),
                None => KeyError::Unknown,
            })
    }

    fn cached_key(&self, id: Option<&str>, algorithm: Algorithm) -> Option<Arc<DecodingKey>> {
        find(&self.cached.read().expect("keys lock").keys, id, algorithm)
    }

    async fn fetch(&self, fetching: &mut Fetching) -> Result<Vec<Key>, String> {
        let client = self
            .client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .timeout(FETCH_TIMEOUT)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|error| format!("cannot make an HTTPS client: {error}"))
            })
            .as_ref()
            .map_err(Clone::clone)?;
        let jwks = match (&self.source, &fetching.jwks) {
            (Source::Jwks(url), _) | (Source::Discover(_), Some(url)) => url.clone(),
            (Source::Discover(issuer), None) => {
                let url = discover(client, issuer).await?;
                fetching.jwks = Some(url.clone());
                url
            }
        };
        let set: JwkSet = serde_json::from_slice(&get(client, &jwks).await?)
            .map_err(|error| format!("{jwks}: not a JWKS: {error}"))?;
        Ok(set.keys.iter().filter_map(usable).collect())
    }
}

/// A JWKS, each key read on its own so that one of a kind this server cannot use (another
/// curve, an encryption key) does not hide the others.
#[derive(Deserialize)]
struct JwkSet {
    keys: Vec<serde_json::Value>,
}

/// A key of the set, if it can verify signatures.
fn usable(value: &serde_json::Value) -> Option<Key> {
    let jwk: Jwk = serde_json::from_value(value.clone()).ok()?;
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return None;
    }
    let key = DecodingKey::from_jwk(&jwk).ok()?;
    // Never a shared secret, whatever the set says.
    if key.family() == jsonwebtoken::AlgorithmFamily::Hmac {
        return None;
    }
    let algorithm = match jwk.common.key_algorithm {
        Some(algorithm) => {
            let name = serde_json::to_value(algorithm).ok()?;
            Some(Algorithm::from_str(name.as_str()?).ok()?)
        }
        None => None,
    };
    Some(Key {
        id: jwk.common.key_id,
        algorithm,
        key: Arc::new(key),
    })
}

/// The key named `id` that fits `algorithm`; with no `id`, the only key that fits.
fn find(keys: &[Key], id: Option<&str>, algorithm: Algorithm) -> Option<Arc<DecodingKey>> {
    let mut fitting = keys.iter().filter(|key| {
        key.key.family() == algorithm.family()
            && key.algorithm.is_none_or(|own| own == algorithm)
            && id.is_none_or(|id| key.id.as_deref() == Some(id))
    });
    let key = fitting.next()?;
    match id {
        Some(_) => Some(key.key.clone()),
        None => fitting.next().is_none().then(|| key.key.clone()),
    }
}

/// The issuer's metadata document's `jwks_uri`: RFC 8414's well-known path first (inserted
/// before the issuer's path), then OpenID Connect's (appended to it). The document must name
/// the issuer exactly (RFC 8414 §3.3), or it is another issuer's.
async fn discover(client: &reqwest::Client, issuer: &Url) -> Result<Url, String> {
    #[derive(Deserialize)]
    struct Metadata {
        issuer: String,
        jwks_uri: Option<String>,
    }
    let path = issuer.path().trim_end_matches('/');
    let mut oauth = issuer.clone();
    oauth.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    let mut openid = issuer.clone();
    openid.set_path(&format!("{path}/.well-known/openid-configuration"));
    let mut problems = Vec::new();
    for url in [oauth, openid] {
        let body = match get(client, &url).await {
            Ok(body) => body,
            Err(problem) => {
                problems.push(problem);
                continue;
            }
        };
        let metadata: Metadata = serde_json::from_slice(&body)
            .map_err(|error| format!("{url}: not authorization server metadata: {error}"))?;
        if metadata.issuer.trim_end_matches('/') != issuer.as_str().trim_end_matches('/') {
            return Err(format!(
                "{url}: names the issuer {}, not {issuer}",
                metadata.issuer
            ));
        }
        let jwks = metadata
            .jwks_uri
            .ok_or_else(|| format!("{url}: names no jwks_uri"))?;
        return checked_url("jwks_uri", &jwks).map_err(|error| format!("{url}: {error}"));
    }
    Err(problems.join("; "))
}

/// The body of a `200` answer to `GET url`, at most [`MAX_DOCUMENT_BYTES`].
async fn get(client: &reqwest::Client, url: &Url) -> Result<Vec<u8>, String> {
    let mut response = client
        .get(url.clone())
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|error| format!("{url}: {error}"))?;
    if !response.status().is_success() {
        return Err(format!("{url}: answered {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| format!("{url}: {error}"))?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("{url}: larger than {MAX_DOCUMENT_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
