//! `carmy client subscribe` on one shop replica hears an order cancelled through another: two
//! `shop http` processes on one PostgreSQL database (the store tells each replica the others'
//! resource changes), one stateless as behind a balancer, the other keeping sessions for the
//! 2025-11-25 client's subscription. The database server is real (tests/servers starts it);
//! without it installed the test skips, unless `CARMY_TEST_SERVERS=required`.

use crate::common;

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::Instant,
};

use common::{CARMY, Served, TempDir, Watchdog, carmy, finish, interrupt, wait_for_line};
use serde_json::{Value, json};
use test_servers::Postgres;

const TOKEN: &str = "carmy-replica-test-token-0123456789";
const PROTOCOLS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// `carmy client` over HTTP to `served`, on `protocol`: the JSON it printed.
fn call(served: &Served, protocol: &str, tool: &str, arguments: &Value) -> Value {
    carmy(&[
        "client",
        "-t",
        "http",
        "-s",
        &served.server,
        "--bearer",
        TOKEN,
        "--protocol",
        protocol,
        "call-tool",
        "-n",
        tool,
        "-a",
        &arguments.to_string(),
    ])
    .ok()
    .json()
}

/// An order placed through `served`: its id.
fn place_order(served: &Served, protocol: &str) -> String {
    let found = call(served, protocol, "search_products", &json!({ "query": "" }));
    let product = found["products"]
        .as_array()
        .and_then(|products| products.iter().find(|product| product["in_stock"] == true))
        .unwrap_or_else(|| panic!("a product in stock: {found:#}"))["id"]
        .clone();
    let order = json!({
        "lines": [{ "product_id": product, "quantity": 1 }],
        "ship_to": {
            "name": "Ada Lovelace", "street": "12 St James's Square",
            "city": "London", "postal_code": "SW1Y 4JH", "country": "GB"
        }
    });
    let placed = call(served, protocol, "place_order", &order);
    placed["order_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{placed:#}"))
        .to_owned()
}

#[test]
fn a_subscriber_on_one_replica_hears_an_order_cancelled_through_another() {
    let Some(postgres) = Postgres::shared() else {
        return;
    };
    let store = postgres.create_database("client_subscribe_replicas");
    let dir = TempDir::new("replica-keys");
    let keys = dir.0.join("state-keys");
    std::fs::write(
        &keys,
        "test Y2xpZW50LXJlcGxpY2FzLXNoYXJlLXRoaXMtMzItYnl0ZS1rZXk=\n",
    )
    .unwrap();
    std::fs::set_permissions(&keys, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let keys = keys.to_str().unwrap();
    let shared = ["--store", &store, "--state-keys-file", keys];
    let grant = ["--grant", "confirm:cancel_order"];
    let a = Served::http_with(TOKEN, &[&shared[..], &grant, &["--stateless"]].concat());
    let b = Served::http_with(TOKEN, &shared);
    for protocol in PROTOCOLS {
        let order = place_order(&a, protocol);
        let uri = format!("shop://orders/{order}");
        let mut child = Command::new(CARMY)
            .args(["client", "-t", "http", "-s", &b.server, "--bearer", TOKEN])
            .args(["--protocol", protocol, "subscribe", "-u", &uri])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("carmy starts");
        let _watchdog = Watchdog::new(child.id());
        let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        wait_for_line(&mut stderr, "subscribed to");
        let cancelling = Instant::now();
        let cancelled = call(&a, protocol, "cancel_order", &json!({ "order_id": order }));
        assert_eq!(cancelled["status"], "cancelled", "{cancelled:#}");
        let mut line = String::new();
        stdout.read_line(&mut line).expect("stdout");
        assert_eq!(line, format!("updated {uri}\n"), "{protocol}");
        eprintln!(
            "{protocol}: heard on the other replica {:?} after the cancellation began",
            cancelling.elapsed()
        );
        interrupt(child.id());
        child.stderr = Some(stderr.into_inner());
        child.stdout = Some(stdout.into_inner());
        let run = finish(child);
        assert_eq!(run.code(), Some(130), "{protocol}: {run:#?}");
    }
}
