//! The protected resource metadata of RFC 9728: which authorization server issues tokens for
//! this server, served at a well-known path, and the `WWW-Authenticate` challenges (RFC 6750)
//! that point clients to it.

use std::sync::Arc;

use reqwest::Url;

use super::OAuthError;

/// RFC 9728's well-known path; a resource with a path has it appended
/// (`/.well-known/oauth-protected-resource/mcp`).
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// A URL for `what`, absolute, without a fragment, and `https` unless its host is a loopback
/// address (OAuth 2.1 asks TLS of every endpoint; a server and issuer on one machine may do
/// without).
pub(super) fn checked_url(what: &'static str, url: &str) -> Result<Url, OAuthError> {
    let refuse = |problem: &str| OAuthError::Url {
        what,
        url: url.to_owned(),
        problem: problem.to_owned(),
    };
    let parsed = Url::parse(url).map_err(|error| refuse(&error.to_string()))?;
    if parsed.fragment().is_some() {
        return Err(refuse("a URL here has no fragment"));
    }
    match parsed.scheme() {
        "https" => {}
        "http" if is_loopback(&parsed) => {}
        "http" => return Err(refuse("plain http is accepted for loopback hosts only")),
        _ => return Err(refuse("expected an https URL")),
    }
    if parsed.host().is_none() {
        return Err(refuse("the URL has no host"));
    }
    Ok(parsed)
}

fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// This server as a protected resource: its URL, where its metadata is, and the challenges
/// naming it.
#[derive(Clone, Debug)]
pub(crate) struct Resource {
    inner: Arc<ResourceInner>,
}

#[derive(Debug)]
struct ResourceInner {
    uri: String,
    metadata_path: String,
    metadata_url: String,
}

impl Resource {
    pub(super) fn new(uri: &str) -> Result<Self, OAuthError> {
        let url = checked_url("resource", uri)?;
        if url.query().is_some() {
            return Err(OAuthError::Url {
                what: "resource",
                url: uri.to_owned(),
                problem: "a resource URL has no query (RFC 8707)".to_owned(),
            });
        }
        let path = url.path().trim_end_matches('/');
        let metadata_path = format!("{METADATA_PATH}{path}");
        let mut metadata_url = url.clone();
        metadata_url.set_path(&metadata_path);
        Ok(Self {
            inner: Arc::new(ResourceInner {
                uri: uri.to_owned(),
                metadata_path,
                metadata_url: metadata_url.to_string(),
            }),
        })
    }

    pub(super) fn uri(&self) -> &str {
        &self.inner.uri
    }

    pub(super) fn metadata_path(&self) -> &str {
        &self.inner.metadata_path
    }

    /// The metadata document: this resource, its issuer, the scopes it knows, and that tokens
    /// come in the `Authorization` header only.
    pub(super) fn document(&self, issuer: &str, scopes: &[&str]) -> serde_json::Value {
        let mut document = serde_json::json!({
            "resource": self.inner.uri,
            "authorization_servers": [issuer],
            "bearer_methods_supported": ["header"],
        });
        if !scopes.is_empty() {
            document["scopes_supported"] = scopes.into();
        }
        document
    }

    /// The challenge of a `401`: where the metadata is, the scopes every token needs, and, for
    /// a token that was sent, the error and why.
    pub(super) fn challenge(&self, error: Option<(&str, &str)>, scopes: &[String]) -> String {
        let mut challenge = format!(
            "Bearer resource_metadata={}",
            quoted(&self.inner.metadata_url)
        );
        if !scopes.is_empty() {
            challenge.push_str(&format!(", scope={}", quoted(&scopes.join(" "))));
        }
        if let Some((error, description)) = error {
            challenge.push_str(&format!(
                ", error={}, error_description={}",
                quoted(error),
                quoted(description)
            ));
        }
        challenge
    }

    /// The challenge of a `403` asking for `scopes` (step-up, RFC 6750 §3.1).
    pub(super) fn insufficient_scope(&self, scopes: &[String], description: &str) -> String {
        format!(
            "Bearer error=\"insufficient_scope\", scope={}, resource_metadata={}, \
             error_description={}",
            quoted(&scopes.join(" ")),
            quoted(&self.inner.metadata_url),
            quoted(description)
        )
    }
}

/// A quoted-string of RFC 9110: `"` and `\` escaped, and what a header cannot carry dropped.
fn quoted(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            ' '..='~' => quoted.push(c),
            _ => {}
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_path_appends_the_resource_s_path() {
        let resource = Resource::new("https://mcp.example.com/mcp").expect("valid");
        assert_eq!(
            resource.metadata_path(),
            "/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            resource.challenge(None, &[]),
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#
        );
        let root = Resource::new("https://mcp.example.com/").expect("valid");
        assert_eq!(root.metadata_path(), METADATA_PATH);
    }

    #[test]
    fn urls_are_https_but_on_loopback() {
        for url in [
            "https://auth.example.com",
            "http://127.0.0.1:9000",
            "http://localhost/x",
            "http://[::1]:1/",
        ] {
            assert!(checked_url("issuer", url).is_ok(), "{url}");
        }
        for (url, problem) in [
            (
                "http://auth.example.com",
                "plain http is accepted for loopback hosts only",
            ),
            ("ftp://auth.example.com", "expected an https URL"),
            ("https://auth.example.com/#x", "a URL here has no fragment"),
            ("auth.example.com", "relative URL without a base"),
        ] {
            let error = checked_url("issuer", url).unwrap_err();
            assert_eq!(
                error,
                OAuthError::Url {
                    what: "issuer",
                    url: url.into(),
                    problem: problem.into()
                }
            );
        }
        assert!(Resource::new("https://mcp.example.com/mcp?x=1").is_err());
    }

    #[test]
    fn challenges_quote_what_they_carry() {
        let resource = Resource::new("http://127.0.0.1:8080/mcp").expect("valid");
        let challenge = resource.challenge(
            Some(("invalid_token", "say \"no\"\n")),
            &["a".into(), "b".into()],
        );
        assert_eq!(
            challenge,
            "Bearer resource_metadata=\"http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp\", \
             scope=\"a b\", error=\"invalid_token\", error_description=\"say \\\"no\\\"\""
        );
    }
}
