//! Resources over MCP, in both lifecycles with rmcp's client: the lists (paged), reads of text
//! and bytes, and the errors each protocol version expects.

use crate::common;

use base64::Engine as _;
use carmy_core::{
    AgentError, Carmy, Content, Contents, Invocation, NoInput, Resource, ResourceSpec, Runtime,
};
use carmy_mcp::McpServer;
use common::{LIFECYCLES, Lifecycle, Session, connect};
use rmcp::model::{ErrorCode, PaginatedRequestParams, ReadResourceRequestParams, ResourceContents};
use schemars::JsonSchema;
use serde::Deserialize;

struct Returns;
impl Resource for Returns {
    type Input = NoInput;
    type Output = String;
    const SPEC: ResourceSpec = ResourceSpec::new("returns", "shop://policies/returns")
        .title("Returns policy")
        .description("How returns work.")
        .mime_type("text/markdown")
        .fresh_for(std::time::Duration::from_secs(300));
    async fn read(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
        Ok("Within 30 days.".into())
    }
}

#[derive(Deserialize, JsonSchema)]
struct PhotoRef {
    #[schemars(regex(pattern = r"^sku-[0-9]{3}$"))]
    id: String,
}

struct Photo;
impl Resource for Photo {
    type Input = PhotoRef;
    type Output = Contents;
    const SPEC: ResourceSpec =
        ResourceSpec::new("photo", "shop://photos/{id}").mime_type("image/png");
    async fn read(&self, input: PhotoRef, _: Invocation) -> Result<Contents, AgentError> {
        if input.id == "sku-999" {
            return Err(AgentError::not_found(
                "NO_PHOTO",
                "no photo of that product",
            ));
        }
        if input.id == "sku-500" {
            return Err(AgentError::internal("the camera broke"));
        }
        Ok(Content::blob(vec![0x89, b'P', b'N', b'G']).into())
    }
}

/// Fixed resources `doc-N` at `shop://docs/N`, for N in the list: enough to need pages.
macro_rules! docs {
    ($($n:literal)*) => {
        const DOCS: &[(&str, &str)] = &[$((concat!("doc-", $n), concat!("shop://docs/", $n))),*];

        fn with_docs(carmy: Carmy) -> Carmy {
            carmy $(.resource(Doc::<$n>))*
        }
    };
}

docs!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
      33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62
      63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92
      93 94 95 96 97 98 99 100 101 102 103 104);

struct Doc<const N: usize>;
impl<const N: usize> Resource for Doc<N> {
    type Input = NoInput;
    type Output = String;
    const SPEC: ResourceSpec = ResourceSpec::new(DOCS[N].0, DOCS[N].1);
    async fn read(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
        Ok(String::new())
    }
}

fn runtime() -> Runtime {
    Carmy::new()
        .resource(Returns)
        .resource(Photo)
        .build()
        .expect("valid catalog")
}

async fn session(lifecycle: Lifecycle, runtime: Runtime) -> Session {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(McpServer::new(runtime).serve_io(read, write));
    connect(lifecycle, client_io).await.0
}

fn read(uri: &str) -> ReadResourceRequestParams {
    ReadResourceRequestParams::new(uri)
}

#[tokio::test]
async fn resources_and_templates_are_listed_apart() {
    for lifecycle in LIFECYCLES {
        let client = session(lifecycle, runtime()).await;
        assert!(
            client
                .peer_info()
                .and_then(|info| info.capabilities.resources.clone())
                .is_some(),
            "{lifecycle:?}: the resources capability"
        );
        let resources = client.list_resources(None).await.expect("list");
        assert_eq!(resources.resources.len(), 1, "{lifecycle:?}");
        let returns = &resources.resources[0];
        assert_eq!(returns.uri, "shop://policies/returns");
        assert_eq!(returns.name, "returns");
        assert_eq!(returns.title.as_deref(), Some("Returns policy"));
        assert_eq!(returns.mime_type.as_deref(), Some("text/markdown"));
        let templates = client
            .list_resource_templates(None)
            .await
            .expect("templates");
        assert_eq!(templates.resource_templates.len(), 1);
        assert_eq!(
            templates.resource_templates[0].uri_template,
            "shop://photos/{id}"
        );
        client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn reads_return_text_and_base64_bytes() {
    for lifecycle in LIFECYCLES {
        let client = session(lifecycle, runtime()).await;
        let text = client
            .read_resource(read("shop://policies/returns"))
            .await
            .expect("read");
        match &text.contents[..] {
            [
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                },
            ] => {
                assert_eq!(uri, "shop://policies/returns");
                assert_eq!(mime_type.as_deref(), Some("text/markdown"));
                assert_eq!(text, "Within 30 days.");
            }
            other => panic!("{lifecycle:?}: {other:?}"),
        }
        let photo = client
            .read_resource(read("shop://photos/sku-001"))
            .await
            .expect("read");
        match &photo.contents[..] {
            [
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                },
            ] => {
                assert_eq!(uri, "shop://photos/sku-001");
                assert_eq!(mime_type.as_deref(), Some("image/png"));
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .unwrap();
                assert_eq!(bytes, [0x89, b'P', b'N', b'G']);
            }
            other => panic!("{lifecycle:?}: {other:?}"),
        }
        client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn errors_follow_the_negotiated_version() {
    for lifecycle in LIFECYCLES {
        let client = session(lifecycle, runtime()).await;
        let not_found = match lifecycle {
            Lifecycle::Initialize => ErrorCode::RESOURCE_NOT_FOUND,
            Lifecycle::Discover => ErrorCode::INVALID_PARAMS,
        };
        for (uri, code, carmy) in [
            ("shop://nothing", not_found, "RESOURCE_NOT_FOUND"),
            ("shop://photos/sku-999", not_found, "NO_PHOTO"),
            (
                "shop://photos/sku-1",
                ErrorCode::INVALID_PARAMS,
                "INVALID_ARGUMENTS",
            ),
            (
                "shop://photos/sku-500",
                ErrorCode::INTERNAL_ERROR,
                "INTERNAL",
            ),
        ] {
            let error = client.read_resource(read(uri)).await.expect_err(uri);
            let rmcp::ServiceError::McpError(error) = error else {
                panic!("{lifecycle:?} {uri}: {error:?}");
            };
            assert_eq!(error.code, code, "{lifecycle:?} {uri}");
            assert_eq!(
                error.data.unwrap()["error"]["code"],
                carmy,
                "{lifecycle:?} {uri}"
            );
        }
        // The server still serves.
        client
            .read_resource(read("shop://policies/returns"))
            .await
            .expect("read");
        client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn a_caller_held_to_some_resources_sees_and_reads_only_those() {
    for lifecycle in LIFECYCLES {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let (read_half, write_half) = tokio::io::split(server_io);
        let access = "resource:shop://photos/*".parse().expect("rules");
        let server =
            McpServer::new(runtime()).context(carmy_core::Context::new().with_access(access));
        tokio::spawn(server.serve_io(read_half, write_half));
        let client = connect(lifecycle, client_io).await.0;
        let resources = client.list_resources(None).await.expect("list");
        assert!(
            resources.resources.is_empty(),
            "{lifecycle:?}: {resources:?}"
        );
        let templates = client
            .list_resource_templates(None)
            .await
            .expect("templates");
        assert_eq!(templates.resource_templates.len(), 1, "{lifecycle:?}");
        let error = client
            .read_resource(read("shop://policies/returns"))
            .await
            .expect_err("refused");
        let rmcp::ServiceError::McpError(error) = error else {
            panic!("{lifecycle:?}: {error:?}");
        };
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{lifecycle:?}");
        assert_eq!(error.data.unwrap()["error"]["code"], "RESOURCE_NOT_ALLOWED");
        client
            .read_resource(read("shop://photos/sku-001"))
            .await
            .expect("an allowed read");
        client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn long_lists_are_paged_in_catalog_order() {
    for lifecycle in LIFECYCLES {
        let runtime = with_docs(Carmy::new()).build().expect("valid catalog");
        let client = session(lifecycle, runtime).await;
        let mut names = Vec::new();
        let mut cursor = None;
        let mut pages = 0;
        loop {
            let request =
                cursor.map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
            let page = client.list_resources(request).await.expect("a page");
            pages += 1;
            names.extend(page.resources.into_iter().map(|resource| resource.name));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(pages, 2, "{lifecycle:?}");
        let expected: Vec<String> = DOCS.iter().map(|(name, _)| (*name).to_owned()).collect();
        assert_eq!(names, expected, "{lifecycle:?}");
        let bad = PaginatedRequestParams::default().with_cursor(Some("p9999".into()));
        assert!(client.list_resources(Some(bad)).await.is_err());
        client.cancel().await.expect("close");
    }
}
