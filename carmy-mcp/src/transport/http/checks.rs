//! The `Host` and `Origin` checks rmcp applies to streamable HTTP, applied here to the legacy
//! transport, which rmcp does not serve: the same allow-lists, read the same way (a `host` or
//! `host:port` entry; an `scheme://host[:port]` origin, `:*` for any port), the same `403`.
//! CORS answers browsers from the same origin list (`cors.rs`).

use axum::{body::Body, response::Response};
use http::{HeaderMap, StatusCode, Uri, header, uri::Authority};

/// The allow-lists of [`HttpServer`](super::HttpServer).
#[derive(Debug)]
pub(in crate::transport::http) struct Allowed {
    /// Empty: every host.
    pub(in crate::transport::http) hosts: Vec<String>,
    /// Empty: no `Origin` at all (requests without one always pass).
    pub(in crate::transport::http) origins: Vec<String>,
}

impl Allowed {
    /// The `403` (or the `400` of a malformed `Host`) to answer a request whose `Host` or
    /// `Origin` is not allowed; `None` when both are.
    pub(super) fn refusal(&self, uri: &Uri, headers: &HeaderMap) -> Option<Response> {
        self.check(uri, headers)
            .err()
            .map(|(status, message)| plain(status, message))
    }

    fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), (StatusCode, &'static str)> {
        const BAD_HOST: (StatusCode, &str) =
            (StatusCode::BAD_REQUEST, "Bad Request: Invalid Host header");
        let host = match headers.get(header::HOST) {
            Some(value) => value
                .to_str()
                .ok()
                .and_then(|host| Authority::try_from(host).ok())
                .ok_or(BAD_HOST)?,
            None => uri
                .authority()
                .cloned()
                .ok_or((StatusCode::BAD_REQUEST, "Bad Request: missing Host header"))?,
        };
        if !self.host_allowed(&host) {
            tracing::warn!(host = %host, "refused a request with a disallowed Host (DNS rebinding?)");
            return Err((
                StatusCode::FORBIDDEN,
                "Forbidden: Host header is not allowed",
            ));
        }
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let origin = origin
            .to_str()
            .ok()
            .and_then(Origin::parse)
            .ok_or((StatusCode::FORBIDDEN, "Forbidden: Invalid Origin header"))?;
        if !self.origin_allowed(&origin) {
            tracing::warn!(?origin, "refused a request with a disallowed Origin");
            return Err((
                StatusCode::FORBIDDEN,
                "Forbidden: Origin header is not allowed",
            ));
        }
        Ok(())
    }

    fn host_allowed(&self, host: &Authority) -> bool {
        let name = normalize(host.host());
        self.hosts.is_empty()
            || self.hosts.iter().any(|allowed| {
                let allowed = allowed.trim();
                match Authority::try_from(allowed) {
                    Ok(entry) => {
                        normalize(entry.host()) == name
                            && entry
                                .port_u16()
                                .is_none_or(|port| host.port_u16() == Some(port))
                    }
                    Err(_) => normalize(allowed) == name,
                }
            })
    }

    /// Whether a request with the `Origin` header `value` may be answered.
    pub(super) fn allows_origin(&self, value: &[u8]) -> bool {
        std::str::from_utf8(value)
            .ok()
            .and_then(Origin::parse)
            .is_some_and(|origin| self.origin_allowed(&origin))
    }

    fn origin_allowed(&self, origin: &Origin) -> bool {
        self.origins.iter().any(|allowed| {
            let allowed = allowed.trim();
            let (entry, any_port) = match allowed.strip_suffix(":*") {
                Some(base) => (base, true),
                None => (allowed, false),
            };
            let Some(entry) = Origin::parse(entry) else {
                return false;
            };
            match (&entry, origin) {
                (Origin::Null, Origin::Null) => true,
                (
                    Origin::Tuple { scheme, host, port },
                    Origin::Tuple {
                        scheme: their_scheme,
                        host: their_host,
                        port: their_port,
                    },
                ) => {
                    scheme == their_scheme
                        && host == their_host
                        && (any_port
                            || port.is_none()
                            || their_port.or_else(|| default_port(their_scheme)) == *port)
                }
                _ => false,
            }
        })
    }
}

/// A browser origin: `null`, or scheme, host and port.
#[derive(Debug, PartialEq, Eq)]
enum Origin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

impl Origin {
    fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        if value.eq_ignore_ascii_case("null") {
            return Some(Self::Null);
        }
        let uri = Uri::try_from(value).ok()?;
        let authority = uri.authority()?;
        Some(Self::Tuple {
            scheme: uri.scheme_str()?.to_ascii_lowercase(),
            host: normalize(authority.host()),
            port: authority.port_u16(),
        })
    }
}

/// The port a scheme implies when an origin omits it (RFC 6454 §4).
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

fn normalize(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

fn plain(status: StatusCode, message: &'static str) -> Response {
    let mut response = Response::new(Body::from(message));
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> Allowed {
        Allowed {
            hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            origins: super::super::LOOPBACK_ORIGINS
                .iter()
                .map(|&origin| origin.into())
                .collect(),
        }
    }

    fn request(host: &str, origin: Option<&str>) -> Result<(), StatusCode> {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, host.parse().unwrap());
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, origin.parse().unwrap());
        }
        allowed()
            .refusal(&Uri::from_static("/sse"), &headers)
            .map_or(Ok(()), |refused| Err(refused.status()))
    }

    #[test]
    fn loopback_hosts_and_pages_pass() {
        assert_eq!(request("127.0.0.1:8080", None), Ok(()));
        assert_eq!(request("[::1]:8080", None), Ok(()));
        assert_eq!(request("localhost", Some("http://localhost:3000")), Ok(()));
        assert_eq!(request("localhost:1", Some("https://127.0.0.1")), Ok(()));
    }

    #[test]
    fn foreign_hosts_and_origins_are_forbidden() {
        assert_eq!(
            request("evil.example:8080", None),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            request("127.0.0.1:8080", Some("https://evil.example")),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            request("127.0.0.1", Some("not an origin")),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            request("127.0.0.1", Some("null")),
            Err(StatusCode::FORBIDDEN)
        );
    }
}
