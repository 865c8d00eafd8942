//! A tool that returns content (text, images, audio, embedded resources) rather than JSON data:
//! its entry says so, its output is the content's JSON form, and a replay gives the same blocks.

use carmy_core::{
    AgentError, Carmy, Content, ContentBlock, Effect, ExecutionStatus, Invocation, NoInput,
    Request, Tool, ToolContent, ToolSpec,
};
use serde_json::json;

struct Chart;

impl Tool for Chart {
    type Input = NoInput;
    type Output = ToolContent;
    const SPEC: ToolSpec = ToolSpec::new("chart", Effect::Write);

    async fn run(&self, _: NoInput, _: Invocation) -> Result<ToolContent, AgentError> {
        Ok(ToolContent::new()
            .text("Sales by month:")
            .image([0x89, b'P', b'N', b'G'], "image/png")
            .resource(Content::text("month,sales").uri("reports://sales.csv")))
    }
}

struct Data;

impl Tool for Data {
    type Input = NoInput;
    type Output = Vec<u32>;
    const SPEC: ToolSpec = ToolSpec::new("data", Effect::None);

    async fn run(&self, _: NoInput, _: Invocation) -> Result<Vec<u32>, AgentError> {
        Ok(vec![1, 2])
    }
}

#[tokio::test]
async fn content_is_kept_in_its_json_form_and_replayed_whole() {
    let runtime = Carmy::new().tool(Chart).tool(Data).build().unwrap();
    let entry = runtime.catalog().get("chart").unwrap();
    assert!(entry.returns_content());
    assert!(
        !entry.has_object_output(),
        "no structured output to publish"
    );
    assert!(!runtime.catalog().get("data").unwrap().returns_content());

    let first = runtime
        .execute(Request::new("chart", json!({})).request_id("c-1"))
        .await;
    assert_eq!(first.status, ExecutionStatus::Succeeded, "{first:?}");
    let value = first.result.as_ref().unwrap();
    assert_eq!(
        value[1],
        json!({ "type": "image", "data": "iVBORw==", "mimeType": "image/png" })
    );
    let blocks = ToolContent::from_json(value).unwrap();
    assert!(
        matches!(blocks.iter().next(), Some(ContentBlock::Text(text)) if text == "Sales by month:")
    );

    let replay = runtime
        .execute(Request::new("chart", json!({})).request_id("c-1"))
        .await;
    assert_eq!(replay.status, ExecutionStatus::Replayed);
    assert_eq!(
        ToolContent::from_json(replay.result.as_ref().unwrap()).unwrap(),
        blocks
    );
}
