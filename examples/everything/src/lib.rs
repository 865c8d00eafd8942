//! `everything`: every tool, resource, template, prompt and completion that the official MCP
//! conformance suite (`@modelcontextprotocol/conformance`) expects of a server, under the names
//! its scenarios use, declared with Carmy and nothing else. CI serves it over streamable HTTP
//! and runs the suite's server scenarios against it, for both protocol revisions
//! (`tests/conformance/run.sh`).
//!
//! Each fixture is what a scenario asks for, to the letter; what the fixtures need that Carmy
//! lacked was built into the libraries (content blocks, questions to the client from inside a
//! tool, resource changes reported by the application), never written around them here.

pub mod asking;
pub mod completion;
pub mod list_changes;
pub mod prompts;
pub mod resources;
pub mod tasks;
pub mod tools;

use carmy::{BuildError, Carmy, Runtime, catalog::SchemaProfile};

/// A 1×1 red PNG: the image of the image fixtures.
pub const RED_PIXEL_PNG: &[u8] = include_bytes!("red.png");
/// 10 ms of silence as 8 kHz mono WAV: the sound of the audio fixture.
pub const SILENCE_WAV: &[u8] = include_bytes!("silence.wav");

/// Every fixture.
pub fn everything() -> Carmy {
    Carmy::new()
        .tool(tools::test_simple_text)
        .tool(tools::test_image_content)
        .tool(tools::test_audio_content)
        .tool(tools::test_embedded_resource)
        .tool(tools::test_multiple_content_types)
        .tool(tools::test_tool_with_logging)
        .tool(tools::test_tool_with_progress)
        .tool(tools::test_error_handling)
        .tool(asking::test_sampling)
        .tool(asking::test_elicitation)
        .tool(asking::test_elicitation_sep1034_defaults)
        .tool(asking::test_elicitation_sep1330_enums)
        .tool(asking::test_input_required_result_elicitation)
        .tool(asking::test_input_required_result_sampling)
        .tool(asking::test_input_required_result_list_roots)
        .tool(asking::test_input_required_result_request_state)
        .tool(asking::test_input_required_result_multiple_inputs)
        .tool(asking::test_input_required_result_multi_round)
        .tool(asking::test_input_required_result_tampered_state)
        .tool(asking::test_input_required_result_capabilities)
        .tool(asking::test_missing_capability)
        .tool(asking::test_streaming_elicitation)
        .tool(tools::test_logging_tool)
        .tool(tools::json_schema_2020_12_tool)
        .tool(tools::test_x_mcp_header)
        .tool(tasks::greet)
        .tool(tasks::slow_compute)
        .tool(tasks::failing_job)
        .tool(tasks::protocol_error_job)
        .tool(tasks::confirm_delete)
        .tool(tasks::multi_input)
        .tool(tasks::test_tool_with_task)
        .tool(list_changes::test_trigger_tool_change)
        .tool(list_changes::test_trigger_prompt_change)
        .tool(list_changes::test_dynamic_tool)
        .resource(resources::static_text)
        .resource(resources::static_binary)
        .resource(resources::template_data)
        .resource(resources::watched_resource)
        .prompt(prompts::test_simple_prompt)
        .prompt(prompts::test_prompt_with_arguments)
        .prompt(prompts::test_prompt_with_embedded_resource)
        .prompt(prompts::test_prompt_with_image)
        .prompt(prompts::test_input_required_result_prompt)
        .prompt(list_changes::test_dynamic_prompt)
        // `test://watched-resource` may be subscribed to.
        .reports_resource_changes()
        // Schemas as declared: the suite checks that 2020-12 keywords reach the client.
        .schema_profile(SchemaProfile::Raw)
}

/// The runtime of every fixture.
pub fn runtime() -> Result<Runtime, BuildError> {
    everything().build()
}
