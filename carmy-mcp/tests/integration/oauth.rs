//! OAuth 2.1 resource server, end to end: a test issuer on loopback publishes its metadata and
//! JWKS and signs tokens with the keys of `tests/oauth-keys/`; the testbed is served over
//! streamable HTTP behind [`OAuth`], and every request goes through a real HTTP client.

use crate::common;

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use axum::{Router, extract::State, response::IntoResponse, routing::get};
use base64::Engine as _;
use carmy_mcp::{HttpServer, McpServer, OAuth};
use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk};
use serde_json::{Value, json};
use tokio::{net::TcpListener, sync::mpsc};

/// A signing key of the test issuer.
struct Signer {
    key: EncodingKey,
    algorithm: Algorithm,
    id: &'static str,
}

impl Signer {
    fn new(pem: &str, algorithm: Algorithm, id: &'static str) -> Self {
        let key = match algorithm {
            Algorithm::ES256 => EncodingKey::from_ec_pem(pem.as_bytes()),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
            _ => EncodingKey::from_rsa_pem(pem.as_bytes()),
        }
        .expect("a test key");
        Self { key, algorithm, id }
    }

    fn rsa_a() -> Self {
        Self::new(
            include_str!("../oauth-keys/rsa-a.pem"),
            Algorithm::RS256,
            "a",
        )
    }

    fn rsa_b() -> Self {
        Self::new(
            include_str!("../oauth-keys/rsa-b.pem"),
            Algorithm::RS256,
            "b",
        )
    }

    /// The public half, as the JWKS publishes it.
    fn jwk(&self) -> Value {
        let mut jwk = serde_json::to_value(
            Jwk::from_encoding_key(&self.key, self.algorithm).expect("a public key"),
        )
        .expect("JSON");
        jwk["kid"] = self.id.into();
        jwk["use"] = "sig".into();
        jwk
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.algorithm);
        header.kid = Some(self.id.to_owned());
        jsonwebtoken::encode(&header, claims, &self.key).expect("signs")
    }
}

/// The authorization server: RFC 8414 metadata and a JWKS the test can change, counting how
/// often the JWKS is fetched.
struct Issuer {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    /// While set, the JWKS endpoint answers `503`.
    down: Arc<AtomicBool>,
}

#[derive(Clone)]
struct IssuerState {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
}

async fn issuer(keys: Vec<Value>) -> Issuer {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let state = IssuerState {
        url: url.clone(),
        keys: Arc::new(Mutex::new(keys)),
        fetches: Arc::default(),
        down: Arc::default(),
    };
    let app = Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(|State(state): State<IssuerState>| async move {
                json_answer(&json!({
                    "issuer": state.url,
                    "jwks_uri": format!("{}/jwks", state.url),
                    "token_endpoint": format!("{}/token", state.url),
                }))
            }),
        )
        .route(
            "/jwks",
            get(|State(state): State<IssuerState>| async move {
                state.fetches.fetch_add(1, Ordering::SeqCst);
                if state.down.load(Ordering::SeqCst) {
                    return (http::StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
                }
                let keys = state.keys.lock().expect("keys").clone();
                json_answer(&json!({ "keys": keys }))
            }),
        )
        .with_state(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Issuer {
        url,
        keys: state.keys,
        fetches: state.fetches,
        down: state.down,
    }
}

fn json_answer(document: &Value) -> axum::response::Response {
    (
        [(http::header::CONTENT_TYPE, "application/json")],
        document.to_string(),
    )
        .into_response()
}

impl Issuer {
    /// Claims of a token for `audience`, valid for the next hour, with `scope`.
    fn claims(&self, audience: &str, scope: &str) -> Value {
        let now = now();
        json!({
            "iss": self.url, "sub": "alice", "aud": audience, "scope": scope,
            "iat": now, "exp": now + 3600,
        })
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// The testbed behind `OAuth` (made by `configure` from the issuer's URL and the resource's).
struct Served {
    addr: SocketAddr,
    resource: String,
    client: reqwest::Client,
}

async fn serve(issuer: &str, configure: impl FnOnce(OAuth) -> OAuth) -> Served {
    let (probe, _) = mpsc::unbounded_channel();
    let testbed = common::tools::testbed(probe);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let resource = format!("http://{addr}/mcp");
    let oauth = configure(OAuth::new(issuer, &resource).expect("a valid configuration"));
    let http = HttpServer::new(McpServer::new(testbed.runtime))
        .stateless(true)
        .oauth(oauth);
    tokio::spawn(http.serve_with_shutdown(listener, std::future::pending()));
    Served {
        addr,
        resource,
        client: reqwest::Client::new(),
    }
}

/// An answer: status, `WWW-Authenticate`, and the body as JSON (`null` if it is not).
struct Answer {
    status: u16,
    challenge: Option<String>,
    retry_after: Option<String>,
    body: Value,
}

impl Served {
    async fn post(&self, token: Option<&str>, message: Value) -> Answer {
        let mut request = self
            .client
            .post(format!("http://{}/mcp", self.addr))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(token) = token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        answer(request.send().await.expect("the server answers")).await
    }

    async fn call(&self, token: &str, tool: &str, arguments: Value) -> Answer {
        let message = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments }
        });
        self.post(Some(token), message).await
    }

    async fn lookup(&self, token: &str) -> Answer {
        self.call(token, "lookup", json!({ "sku": "MOUSE-1" }))
            .await
    }

    async fn listed(&self, token: &str) -> Vec<String> {
        let listed = self
            .post(
                Some(token),
                json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
            )
            .await;
        assert_eq!(listed.status, 200, "{}", listed.body);
        let mut names: Vec<String> = listed.body["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|tool| tool["name"].as_str().expect("a name").to_owned())
            .collect();
        names.sort();
        names
    }

    fn metadata_url(&self) -> String {
        format!(
            "http://{}/.well-known/oauth-protected-resource/mcp",
            self.addr
        )
    }
}

async fn answer(response: reqwest::Response) -> Answer {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().expect("ASCII").to_owned())
    };
    let status = response.status().as_u16();
    let challenge = header("www-authenticate");
    let retry_after = header("retry-after");
    let text = response.text().await.expect("a body");
    let body = serde_json::from_str(&text).unwrap_or_else(|_| {
        // An SSE answer: its one JSON-RPC message.
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .next()
            .unwrap_or(Value::Null)
    });
    Answer {
        status,
        challenge,
        retry_after,
        body,
    }
}

fn succeeded(answer: &Answer) -> bool {
    answer.status == 200 && answer.body["result"]["isError"] == false
}

#[tokio::test]
async fn the_metadata_names_the_issuer_and_a_missing_token_is_pointed_to_it() {
    let issuer = issuer(vec![Signer::rsa_a().jwk()]).await;
    let served = serve(&issuer.url, |oauth| {
        oauth
            .scope("shop:read", ["allow:effect:read"])
            .expect("a scope")
    })
    .await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = served
            .client
            .get(format!("http://{}{path}", served.addr))
            .send()
            .await
            .expect("answers");
        assert_eq!(response.status(), 200, "{path}");
        let document: Value = response.json_value().await;
        assert_eq!(
            document,
            json!({
                "resource": served.resource,
                "authorization_servers": [issuer.url],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["shop:read"],
            }),
            "{path}"
        );
    }
    let refused = served
        .post(
            None,
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
        )
        .await;
    assert_eq!(refused.status, 401);
    assert_eq!(
        refused.challenge.as_deref(),
        Some(format!("Bearer resource_metadata=\"{}\"", served.metadata_url()).as_str())
    );
}

/// `json()` without reqwest's `json` feature.
trait JsonValue {
    async fn json_value(self) -> Value;
}

impl JsonValue for reqwest::Response {
    async fn json_value(self) -> Value {
        serde_json::from_str(&self.text().await.expect("a body")).expect("JSON")
    }
}

#[tokio::test]
async fn good_tokens_of_each_algorithm_are_accepted() {
    let signers = [
        Signer::rsa_a(),
        Signer::new(include_str!("../oauth-keys/ec.pem"), Algorithm::ES256, "ec"),
        Signer::new(include_str!("../oauth-keys/ed.pem"), Algorithm::EdDSA, "ed"),
        Signer::new(
            include_str!("../oauth-keys/rsa-b.pem"),
            Algorithm::PS256,
            "ps",
        ),
    ];
    let issuer = issuer(signers.iter().map(Signer::jwk).collect()).await;
    let served = serve(&issuer.url, |oauth| oauth).await;
    for signer in &signers {
        let token = signer.sign(&issuer.claims(&served.resource, ""));
        let answer = served.lookup(&token).await;
        assert!(
            succeeded(&answer),
            "{:?}: {}",
            signer.algorithm,
            answer.body
        );
    }
    // Keys are fetched once, not per token.
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn bad_tokens_are_refused_with_invalid_token_and_why() {
    let signer = Signer::rsa_a();
    let issuer = issuer(vec![signer.jwk()]).await;
    let served = serve(&issuer.url, |oauth| oauth).await;
    let good = issuer.claims(&served.resource, "");
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = good.clone();
        change(&mut claims);
        signer.sign(&claims)
    };
    let base64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let unsigned = format!(
        "{}.{}.",
        base64(br#"{"alg":"none","typ":"JWT"}"#),
        base64(good.to_string().as_bytes())
    );
    // HS256 keyed with what an attacker knows: the published key, taken for a shared secret.
    let confused = jsonwebtoken::encode(
        &Header {
            kid: Some("a".into()),
            ..Header::new(Algorithm::HS256)
        },
        &good,
        &EncodingKey::from_secret(signer.jwk()["n"].as_str().expect("n").as_bytes())
            .expect("a secret"),
    )
    .expect("signs");
    // Signed by a key the issuer does not publish, under the published key's id.
    let forged = Signer::new(
        include_str!("../oauth-keys/rsa-b.pem"),
        Algorithm::RS256,
        "a",
    )
    .sign(&good);
    let cases = [
        (
            with(&|claims| claims["exp"] = json!(now() - 3600)),
            "the access token has expired",
        ),
        (
            with(&|claims| claims["aud"] = json!("https://other.example/mcp")),
            "the access token is not for this server",
        ),
        (
            with(&|claims| claims["iss"] = json!("https://evil.example")),
            "the access token is from another issuer",
        ),
        (
            with(&|claims| claims["nbf"] = json!(now() + 3600)),
            "the access token is not valid yet",
        ),
        (
            with(&|claims| {
                claims.as_object_mut().expect("an object").remove("sub");
            }),
            "the access token lacks a claim (exp, iss, aud, sub)",
        ),
        (forged, "the access token's signature is wrong"),
        (unsigned, "the access token is not a signed JWT"),
        (confused, "the access token's algorithm is not accepted"),
        (
            "not-a-jwt".to_owned(),
            "the access token is not a signed JWT",
        ),
    ];
    for (token, reason) in cases {
        let refused = served.lookup(&token).await;
        assert_eq!(refused.status, 401, "{reason}: {}", refused.body);
        assert_eq!(refused.body["reason"], reason);
        assert_eq!(
            refused.challenge.as_deref(),
            Some(
                format!(
                    "Bearer resource_metadata=\"{}\", error=\"invalid_token\", \
                     error_description=\"{reason}\"",
                    served.metadata_url()
                )
                .as_str()
            ),
        );
    }
    // An audience listed among others is this server's.
    let token = with(&|claims| claims["aud"] = json!(["https://other.example", served.resource]));
    assert!(succeeded(&served.lookup(&token).await));
}

#[tokio::test]
async fn rotated_keys_are_picked_up_and_unknown_ones_do_not_flood_the_issuer() {
    let (a, b) = (Signer::rsa_a(), Signer::rsa_b());
    let issuer = issuer(vec![a.jwk()]).await;
    let served = serve(&issuer.url, |oauth| oauth).await;
    let claims = issuer.claims(&served.resource, "");
    assert!(succeeded(&served.lookup(&a.sign(&claims)).await));
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);

    // The issuer rotates: b is published, a withdrawn. Once the refetch interval has passed,
    // the first token signed by b fetches the keys again.
    *issuer.keys.lock().expect("keys") = vec![b.jwk()];
    tokio::time::sleep(Duration::from_millis(5_100)).await;
    assert!(succeeded(&served.lookup(&b.sign(&claims)).await));
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2);
    let withdrawn = served.lookup(&a.sign(&claims)).await;
    assert_eq!(withdrawn.status, 401, "{}", withdrawn.body);
    assert_eq!(
        withdrawn.body["reason"],
        "the access token is signed by a key the issuer does not publish"
    );

    // Many tokens naming keys nobody publishes: at most one more fetch.
    let strangers: Vec<String> = (0..20)
        .map(|index| {
            let mut header = Header::new(Algorithm::RS256);
            header.kid = Some(format!("unknown-{index}"));
            jsonwebtoken::encode(&header, &claims, &b.key).expect("signs")
        })
        .collect();
    for token in &strangers {
        assert_eq!(served.lookup(token).await.status, 401);
    }
    assert!(issuer.fetches.load(Ordering::SeqCst) <= 3);
    assert!(succeeded(&served.lookup(&b.sign(&claims)).await));
}

#[tokio::test]
async fn cached_keys_outlive_an_issuer_outage() {
    let signer = Signer::rsa_a();
    let issuer = issuer(vec![signer.jwk()]).await;
    // Keys are stale at once: every token after the refetch interval tries the issuer again.
    let served = serve(&issuer.url, |oauth| oauth.keys_max_age(Duration::ZERO)).await;
    let token = signer.sign(&issuer.claims(&served.resource, ""));
    assert!(succeeded(&served.lookup(&token).await));
    issuer.down.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(5_100)).await;
    let during = served.lookup(&token).await;
    assert!(succeeded(&during), "{}", during.body);
    assert_eq!(
        issuer.fetches.load(Ordering::SeqCst),
        2,
        "the refetch was tried"
    );
    // Within the interval, nothing more is asked of the failing issuer.
    for _ in 0..5 {
        assert!(succeeded(&served.lookup(&token).await));
    }
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn scopes_decide_the_tools_and_a_missing_one_is_asked_for() {
    let signer = Signer::rsa_a();
    let issuer = issuer(vec![signer.jwk()]).await;
    let served = serve(&issuer.url, |oauth| {
        oauth
            .scope("shop:read", ["allow:effect:read"])
            .and_then(|oauth| oauth.scope("shop:orders", ["allow:place_order"]))
            .expect("scopes")
    })
    .await;
    let reader = signer.sign(&issuer.claims(&served.resource, "shop:read"));
    assert_eq!(served.listed(&reader).await, ["lookup", "slow"]);
    let step_up = served
        .call(
            &reader,
            "place_order",
            json!({ "sku": "MOUSE-1", "quantity": 1 }),
        )
        .await;
    assert_eq!(step_up.status, 403, "{}", step_up.body);
    assert_eq!(
        step_up.challenge.as_deref(),
        Some(
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"shop:read shop:orders\", \
                 resource_metadata=\"{}\", error_description=\"calling `place_order` needs the \
                 scope shop:orders\"",
                served.metadata_url()
            )
            .as_str()
        )
    );

    let buyer = signer.sign(&issuer.claims(&served.resource, "shop:read shop:orders"));
    assert_eq!(
        served.listed(&buyer).await,
        ["lookup", "place_order", "slow"]
    );
    let placed = served
        .call(
            &buyer,
            "place_order",
            json!({ "sku": "MOUSE-1", "quantity": 1 }),
        )
        .await;
    assert!(succeeded(&placed), "{}", placed.body);

    // No scope allows delete_order: no step-up, the runtime refuses the call, recorded.
    let refused = served
        .call(&buyer, "delete_order", json!({ "order_id": "ord-1" }))
        .await;
    assert_eq!(refused.status, 200, "{}", refused.body);
    assert_eq!(
        refused.body["result"]["_meta"]["carmy/error"]["code"], "TOOL_NOT_ALLOWED",
        "{}",
        refused.body
    );

    // Scopes as an array (`scp`), as some issuers write them.
    let mut claims = issuer.claims(&served.resource, "");
    claims["scp"] = json!(["shop:orders"]);
    assert_eq!(served.listed(&signer.sign(&claims)).await, ["place_order"]);
}

#[tokio::test]
async fn a_required_scope_is_asked_for_on_every_request() {
    let signer = Signer::rsa_a();
    let issuer = issuer(vec![signer.jwk()]).await;
    let served = serve(&issuer.url, |oauth| {
        oauth.required_scopes(["mcp"]).expect("a scope name")
    })
    .await;
    let without = served
        .lookup(&signer.sign(&issuer.claims(&served.resource, "profile")))
        .await;
    assert_eq!(without.status, 403, "{}", without.body);
    let challenge = without.challenge.expect("a challenge");
    assert!(
        challenge.starts_with(r#"Bearer error="insufficient_scope", scope="profile mcp""#),
        "{challenge}"
    );
    let with = served
        .lookup(&signer.sign(&issuer.claims(&served.resource, "mcp")))
        .await;
    assert!(succeeded(&with), "{}", with.body);
    // And a missing token is told which scope to ask for.
    let anonymous = served
        .post(None, json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }))
        .await;
    assert_eq!(
        anonymous.challenge.as_deref(),
        Some(
            format!(
                "Bearer resource_metadata=\"{}\", scope=\"mcp\"",
                served.metadata_url()
            )
            .as_str()
        )
    );
}

#[tokio::test]
async fn an_unreachable_issuer_is_a_retryable_refusal_not_a_bad_token() {
    // A port nobody listens on: bound, then closed.
    let closed = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let signer = Signer::rsa_a();
    let served = serve(&url, |oauth| oauth).await;
    let claims = json!({
        "iss": url, "sub": "alice", "aud": served.resource, "exp": now() + 3600,
    });
    let refused = served.lookup(&signer.sign(&claims)).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.retry_after.as_deref(), Some("5"));
    assert!(refused.challenge.is_none());
}

#[test]
fn bad_configurations_are_refused_with_what_is_wrong() {
    let error = OAuth::new("http://auth.example.com", "https://mcp.example.com/mcp").unwrap_err();
    assert_eq!(
        error.to_string(),
        "issuer `http://auth.example.com`: plain http is accepted for loopback hosts only"
    );
    let oauth = OAuth::new("https://auth.example.com", "https://mcp.example.com/mcp").expect("ok");
    assert_eq!(
        oauth
            .scope("x", ["allow:effect:everything"])
            .unwrap_err()
            .to_string(),
        "scope `x`: access rule `effect:everything`: unknown effect `everything`; expected none, \
         read, write, destructive or external_write"
    );
}
