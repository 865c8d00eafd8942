//! Three `shop http --stateless` replicas on one PostgreSQL database, then on one Redis: what
//! a load balancer in front of them would see.
//!
//! - Every request id sent several times, to different replicas at once: each call runs
//!   exactly once, and every duplicate gets the same outcome and execution id.
//! - A replica killed with SIGKILL in the middle of writes: each retry on another replica gets
//!   the committed outcome or a clean run, never `EXECUTION_UNCERTAIN` and never a second order.
//! - The database crashed and restarted under load: calls fail closed with a retryable
//!   `STORE_UNAVAILABLE` while it is down, none runs twice, and service resumes by itself.
//!
//! The servers are real (tests/servers starts them); without them installed the tests skip,
//! unless `CARMY_TEST_SERVERS=required`.

use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use test_servers::{Postgres, Redis};

const TOKEN: &str = "replica-test-token";

/// A store server the replicas share, crashed and restarted on demand.
enum Database {
    Postgres(Postgres),
    Redis(Redis),
}

impl Database {
    fn postgres() -> Option<Self> {
        Postgres::start().map(Self::Postgres)
    }

    fn redis() -> Option<Self> {
        Redis::start().map(Self::Redis)
    }

    fn url(&self) -> String {
        match self {
            Self::Postgres(server) => server.url(),
            Self::Redis(server) => server.url(),
        }
    }

    fn crash(&self) {
        match self {
            Self::Postgres(server) => server.crash(),
            Self::Redis(server) => server.crash(),
        }
    }

    fn restart(&self) {
        match self {
            Self::Postgres(server) => server.restart(),
            Self::Redis(server) => server.restart(),
        }
    }
}

/// One `shop http --stateless` process on the shared store.
struct Replica {
    child: Child,
    addr: String,
    _dir: Scratch,
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Replica {
    fn start(store: &str) -> Self {
        use std::os::unix::fs::PermissionsExt;
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "shop-replica-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let tokens = dir.join("tokens");
        std::fs::write(&tokens, format!("{TOKEN} alice\n")).unwrap();
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
        // Replicas sharing a store share the keys of their round trips.
        let keys = dir.join("state-keys");
        std::fs::write(
            &keys,
            "test cmVwbGljYXMtc2hhcmUtdGhpcy1rZXktb2YtMzItYnl0ZXM=\n",
        )
        .unwrap();
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_shop"))
            .args([
                "http",
                "--stateless",
                "--addr",
                "127.0.0.1:0",
                "--store",
                store,
            ])
            .arg("--token-file")
            .arg(&tokens)
            .arg("--state-keys-file")
            .arg(&keys)
            .env_remove("CARMY_STORE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the shop binary starts");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        let addr = loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "the replica exited before listening: {said}"
            );
            if let Some(url) = line.trim().strip_prefix("listening on http://") {
                break url.trim_end_matches("/mcp").to_owned();
            }
            said.push_str(&line);
        };
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Self {
            child,
            addr,
            _dir: Scratch(dir),
        }
    }

    fn client(&self) -> Client {
        Client::connect(&self.addr)
    }

    fn kill_9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A keep-alive HTTP/1.1 connection to one replica, posting JSON-RPC.
struct Client {
    addr: String,
    reader: BufReader<TcpStream>,
    stream: TcpStream,
}

impl Client {
    fn connect(addr: &str) -> Self {
        let stream = TcpStream::connect(addr).expect("the replica accepts");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        Self {
            addr: addr.to_owned(),
            reader: BufReader::new(stream.try_clone().unwrap()),
            stream,
        }
    }

    /// Posts `message`; `None` when the connection failed (the replica is gone).
    fn post(&mut self, message: &Value) -> Option<Value> {
        let body = message.to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        self.stream
            .write_all(format!("{head}{body}").as_bytes())
            .ok()?;
        let mut line = String::new();
        if self.reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let status: u16 = line.split_whitespace().nth(1)?.parse().ok()?;
        let mut length = 0;
        loop {
            line.clear();
            self.reader.read_line(&mut line).ok()?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().ok()?;
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).ok()?;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        Some(serde_json::from_slice(&body).expect("a JSON-RPC answer"))
    }

    /// `tools/call` with an optional request id: its result, or `None` if the replica died.
    fn call(&mut self, tool: &str, arguments: Value, request_id: Option<&str>) -> Option<Value> {
        let mut params = json!({ "name": tool, "arguments": arguments });
        if let Some(request_id) = request_id {
            params["_meta"] = json!({ "carmy/request_id": request_id });
        }
        let answer = self.post(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params
        }))?;
        Some(answer["result"].clone())
    }
}

/// What a `tools/call` result says: the outcome to compare across duplicates.
#[derive(Clone, Debug, PartialEq)]
struct Answer {
    execution_id: String,
    status: String,
    /// The order, or the error.
    body: Value,
}

impl Answer {
    fn of(result: &Value) -> Self {
        let meta = &result["_meta"];
        let body = if result["isError"] == true {
            meta["carmy/error"].clone()
        } else {
            result["structuredContent"].clone()
        };
        Self {
            execution_id: meta["carmy/execution_id"].as_str().unwrap_or("").to_owned(),
            status: meta["carmy/status"].as_str().unwrap_or("").to_owned(),
            body,
        }
    }

    fn is_ok(&self) -> bool {
        self.body.get("order_id").is_some()
    }

    fn error_code(&self) -> Option<&str> {
        self.body["code"].as_str()
    }
}

/// The products that are in stock, in catalog order.
fn in_stock(client: &mut Client) -> Vec<String> {
    let found = client
        .call("search_products", json!({ "query": "", "limit": 50 }), None)
        .unwrap();
    found["structuredContent"]["products"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|product| product["in_stock"] == true)
        .map(|product| product["id"].as_str().unwrap().to_owned())
        .collect()
}

fn order_of(product: &str) -> Value {
    json!({
        "lines": [{ "product_id": product, "quantity": 1 }],
        "ship_to": {
            "name": "Ada Lovelace", "street": "12 St James's Square",
            "city": "London", "postal_code": "SW1Y 4JH", "country": "GB"
        }
    })
}

/// Every order the shop holds, by id, page after page.
fn orders(client: &mut Client) -> BTreeMap<String, Value> {
    let mut all = BTreeMap::new();
    let mut arguments = json!({ "limit": 50 });
    loop {
        let listed = client.call("list_orders", arguments.clone(), None).unwrap();
        let page = &listed["structuredContent"];
        for order in page["orders"].as_array().unwrap() {
            all.insert(
                order["order_id"].as_str().unwrap().to_owned(),
                order.clone(),
            );
        }
        match page.get("next_cursor") {
            Some(cursor) => arguments["cursor"] = cursor.clone(),
            None => return all,
        }
    }
}

/// Checks the books against what the calls were told: one order per request id that placed
/// one (never two), and the stock of each product down by exactly the units those took.
fn check_books(client: &mut Client, placed: &BTreeMap<String, Answer>, products: &[String]) {
    let held = orders(client);
    let told: BTreeSet<String> = placed
        .values()
        .map(|answer| answer.body["order_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        told.len(),
        placed.len(),
        "two request ids were told the same order"
    );
    let held_ids: BTreeSet<String> = held.keys().cloned().collect();
    assert_eq!(held_ids, told, "the books and the answers disagree");
    let mut sold: BTreeMap<&str, u64> = BTreeMap::new();
    for order in held.values() {
        *sold
            .entry(order["lines"][0]["product_id"].as_str().unwrap())
            .or_default() += 1;
    }
    for product in products {
        let details = client
            .call("get_product", json!({ "id": product }), None)
            .unwrap();
        let stock = details["structuredContent"]["stock"].as_u64().unwrap();
        let taken = sold.get(product.as_str()).copied().unwrap_or(0);
        assert_eq!(stock, 5 - taken, "{product}: {taken} sold");
    }
}

/// Runs `jobs` on `threads` threads, each with its own connection to every replica.
fn run_jobs(
    replicas: &[Replica],
    jobs: Vec<(String, usize, String)>,
    threads: usize,
) -> Vec<(String, Answer)> {
    let queue = Arc::new(Mutex::new(VecDeque::from(jobs)));
    let addrs: Vec<String> = replicas
        .iter()
        .map(|replica| replica.addr.clone())
        .collect();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let queue = Arc::clone(&queue);
            let addrs = addrs.clone();
            std::thread::spawn(move || {
                // Connected on first use: a dead replica is never dialled.
                let mut clients: Vec<Option<Client>> = addrs.iter().map(|_| None).collect();
                let mut answers = Vec::new();
                loop {
                    let Some((id, replica, product)) = queue.lock().unwrap().pop_front() else {
                        return answers;
                    };
                    let client =
                        clients[replica].get_or_insert_with(|| Client::connect(&addrs[replica]));
                    let result = client
                        .call("place_order", order_of(&product), Some(&id))
                        .expect("the replica answers");
                    answers.push((id, Answer::of(&result)));
                }
            })
        })
        .collect();
    workers
        .into_iter()
        .flat_map(|worker| worker.join().unwrap())
        .collect()
}

fn every_request_runs_once_whichever_replicas_its_copies_reach(database: &Database) {
    const REQUESTS: usize = 120;
    const COPIES: usize = 3;
    let replicas: Vec<Replica> = (0..3).map(|_| Replica::start(&database.url())).collect();
    let products = in_stock(&mut replicas[0].client());
    // Each request's copies next to each other in the queue, each to another replica, so they
    // are in flight together.
    let jobs = (0..REQUESTS)
        .flat_map(|n| {
            let product = products[n % products.len()].clone();
            (0..COPIES).map(move |copy| (format!("order-{n}"), (n + copy) % 3, product.clone()))
        })
        .collect();
    let started = Instant::now();
    let answers = run_jobs(&replicas, jobs, 24);
    eprintln!(
        "{} calls in {:?} over 3 replicas",
        answers.len(),
        started.elapsed()
    );
    let mut by_id: BTreeMap<String, Vec<Answer>> = BTreeMap::new();
    for (id, answer) in answers {
        by_id.entry(id).or_default().push(answer);
    }
    let mut placed = BTreeMap::new();
    for (id, copies) in &by_id {
        assert_eq!(copies.len(), COPIES);
        let first = &copies[0];
        assert!(first.is_ok(), "{id}: {first:?}");
        for copy in copies {
            assert_eq!(
                (&copy.execution_id, &copy.body),
                (&first.execution_id, &first.body),
                "{id}: copies disagree"
            );
        }
        let ran = copies
            .iter()
            .filter(|copy| copy.status == "succeeded")
            .count();
        let replayed = copies
            .iter()
            .filter(|copy| copy.status == "replayed")
            .count();
        assert_eq!((ran, replayed), (1, COPIES - 1), "{id}: {copies:?}");
        placed.insert(id.clone(), first.clone());
    }
    assert_eq!(placed.len(), REQUESTS);
    check_books(&mut replicas[2].client(), &placed, &products);
}

fn a_replica_killed_mid_write_leaves_its_retries_a_committed_outcome_or_a_clean_run(
    database: &Database,
) {
    let mut replicas: Vec<Replica> = (0..3).map(|_| Replica::start(&database.url())).collect();
    let products = in_stock(&mut replicas[1].client());
    // Twelve callers write through the first replica until it dies under them.
    let answered: Arc<Mutex<BTreeMap<String, Answer>>> = Arc::default();
    let sent: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let callers: Vec<_> = (0..12)
        .map(|caller| {
            let addr = replicas[0].addr.clone();
            let products = products.clone();
            let answered = Arc::clone(&answered);
            let sent = Arc::clone(&sent);
            std::thread::spawn(move || {
                let mut client = Client::connect(&addr);
                for n in 0.. {
                    let id = format!("kill-{caller}-{n}");
                    // At most 13 calls per caller: 156 over 34 products, 5 of each at most.
                    let product = products[(caller * 13 + n) % products.len()].clone();
                    sent.lock().unwrap().push((id.clone(), product.clone()));
                    match client.call("place_order", order_of(&product), Some(&id)) {
                        Some(result) => {
                            answered.lock().unwrap().insert(id, Answer::of(&result));
                        }
                        None => return,
                    }
                    if n >= 12 {
                        return;
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(150));
    replicas[0].kill_9();
    for caller in callers {
        caller.join().unwrap();
    }
    let sent = sent.lock().unwrap().clone();
    let answered = answered.lock().unwrap().clone();
    eprintln!(
        "killed with {} of {} calls answered",
        answered.len(),
        sent.len()
    );
    assert!(
        answered.len() < sent.len(),
        "the replica was killed with no call in flight"
    );
    // Every request retried on the other replicas: a claim the dead replica held makes its
    // retry wait for the lease to run out, then run cleanly.
    let jobs = sent
        .iter()
        .enumerate()
        .map(|(n, (id, product))| (id.clone(), 1 + n % 2, product.clone()))
        .collect();
    let started = Instant::now();
    let retries = run_jobs(&replicas, jobs, 24);
    eprintln!("retried in {:?}", started.elapsed());
    let mut placed = BTreeMap::new();
    for (id, retry) in retries {
        assert_ne!(
            retry.error_code(),
            Some("EXECUTION_UNCERTAIN"),
            "{id}: a transactional write is never uncertain"
        );
        assert!(retry.is_ok(), "{id}: {retry:?}");
        if let Some(first) = answered.get(&id) {
            assert_eq!(retry.status, "replayed", "{id}");
            assert_eq!(
                (&retry.execution_id, &retry.body),
                (&first.execution_id, &first.body),
                "{id}: the retry was told another outcome"
            );
        }
        placed.insert(id, retry);
    }
    check_books(&mut replicas[1].client(), &placed, &products);
    replicas.remove(0);
}

fn calls_fail_closed_while_the_database_is_down_and_resume_by_themselves(database: &Database) {
    let replicas: Vec<Replica> = (0..3).map(|_| Replica::start(&database.url())).collect();
    let products = in_stock(&mut replicas[0].client());
    let stop = Arc::new(AtomicBool::new(false));
    let outcomes: Arc<Mutex<Vec<(String, String, Answer)>>> = Arc::default();
    let callers: Vec<_> = (0..9)
        .map(|caller| {
            let addr = replicas[caller % 3].addr.clone();
            let products = products.clone();
            let stop = Arc::clone(&stop);
            let outcomes = Arc::clone(&outcomes);
            std::thread::spawn(move || {
                let mut client = Client::connect(&addr);
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) && n < 15 {
                    let id = format!("down-{caller}-{n}");
                    // At most 15 calls per caller, each its own unit: 135 over 34 products, 4 of each at most.
                    let product = products[(caller * 15 + n) % products.len()].clone();
                    let result = client
                        .call("place_order", order_of(&product), Some(&id))
                        .expect("the replica keeps serving while its database is down");
                    outcomes
                        .lock()
                        .unwrap()
                        .push((id, product, Answer::of(&result)));
                    n += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    database.crash();
    std::thread::sleep(Duration::from_millis(1500));
    database.restart();
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        caller.join().unwrap();
    }
    let outcomes = outcomes.lock().unwrap().clone();
    let refused: Vec<&Answer> = outcomes
        .iter()
        .map(|(_, _, answer)| answer)
        .filter(|answer| !answer.is_ok())
        .collect();
    eprintln!(
        "{} calls, {} refused while the database was down",
        outcomes.len(),
        refused.len()
    );
    assert!(
        !refused.is_empty(),
        "no call met the outage: the test proves nothing"
    );
    for answer in &refused {
        assert_eq!(answer.error_code(), Some("STORE_UNAVAILABLE"), "{answer:?}");
        assert_eq!(answer.body["retryable"], true, "{answer:?}");
    }
    // Service resumes by itself: new calls succeed on every replica.
    for (n, replica) in replicas.iter().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut client = replica.client();
        for attempt in 0.. {
            // `list_orders` reads the orders in the store: it fails while the store does.
            let id = format!("resumed-{n}-{attempt}");
            let result = client.call("list_orders", json!({}), Some(&id)).unwrap();
            if result["isError"] != true {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "replica {n} did not resume: {result}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    // Every request retried until it is placed: none ran twice.
    let jobs = outcomes
        .iter()
        .enumerate()
        .map(|(n, (id, product, _))| (id.clone(), n % 3, product.clone()))
        .collect();
    let mut placed = BTreeMap::new();
    for (id, retry) in run_jobs(&replicas, jobs, 24) {
        assert!(retry.is_ok(), "{id}: {retry:?}");
        placed.insert(id, retry);
    }
    for (id, _, first) in &outcomes {
        if first.is_ok() {
            let retry = &placed[id];
            assert_eq!(retry.status, "replayed", "{id}");
            assert_eq!(retry.execution_id, first.execution_id, "{id}");
        }
    }
    check_books(&mut replicas[0].client(), &placed, &products);
}

#[test]
fn postgres_every_request_runs_once_whichever_replicas_its_copies_reach() {
    if let Some(database) = Database::postgres() {
        every_request_runs_once_whichever_replicas_its_copies_reach(&database);
    }
}

#[test]
fn postgres_a_replica_killed_mid_write_leaves_its_retries_a_committed_outcome_or_a_clean_run() {
    if let Some(database) = Database::postgres() {
        a_replica_killed_mid_write_leaves_its_retries_a_committed_outcome_or_a_clean_run(&database);
    }
}

#[test]
fn postgres_calls_fail_closed_while_the_database_is_down_and_resume_by_themselves() {
    if let Some(database) = Database::postgres() {
        calls_fail_closed_while_the_database_is_down_and_resume_by_themselves(&database);
    }
}

#[test]
fn redis_every_request_runs_once_whichever_replicas_its_copies_reach() {
    if let Some(database) = Database::redis() {
        every_request_runs_once_whichever_replicas_its_copies_reach(&database);
    }
}

#[test]
fn redis_a_replica_killed_mid_write_leaves_its_retries_a_committed_outcome_or_a_clean_run() {
    if let Some(database) = Database::redis() {
        a_replica_killed_mid_write_leaves_its_retries_a_committed_outcome_or_a_clean_run(&database);
    }
}

#[test]
fn redis_calls_fail_closed_while_the_database_is_down_and_resume_by_themselves() {
    if let Some(database) = Database::redis() {
        calls_fail_closed_while_the_database_is_down_and_resume_by_themselves(&database);
    }
}
