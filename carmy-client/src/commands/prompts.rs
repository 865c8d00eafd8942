//! `list-prompts` and `get-prompt`.

use rmcp::model::GetPromptRequestParams;
use serde_json::{Value, json};

use super::{Run, str_of, to_json};
use crate::{
    args::GetPrompt,
    exit::Outcome,
    render::{Saver, Table, contents, one_line},
};

pub(super) async fn list(run: &Run) -> Outcome {
    let peer = run.session.peer();
    let prompts = super::pagination::every_page(run, "prompts/list", |params| async move {
        let page = peer.list_prompts(params).await?;
        Ok((page.prompts, page.next_cursor))
    })
    .await?;
    let listed = json!({ "prompts": prompts });
    run.print(&listed, |listed| {
        let mut table = Table::new(&["PROMPT", "ARGUMENTS", "DESCRIPTION"]);
        for prompt in listed["prompts"].as_array().into_iter().flatten() {
            let arguments: Vec<String> = prompt["arguments"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|argument| {
                    let name = str_of(argument, "name");
                    if argument["required"] == Value::Bool(true) {
                        name.to_owned()
                    } else {
                        format!("[{name}]")
                    }
                })
                .collect();
            table.row(vec![
                str_of(prompt, "name").to_owned(),
                arguments.join(" "),
                one_line(str_of(prompt, "description"), 60),
            ]);
        }
        Ok(table.render("(no prompts)"))
    })
}

pub(super) async fn get(run: &Run, args: &GetPrompt) -> Outcome {
    let arguments = super::string_object(&args.arguments, "-a")?;
    let mut params = GetPromptRequestParams::new(args.name.clone());
    if !arguments.is_empty() {
        params = params.with_arguments(
            arguments
                .into_iter()
                .map(|(key, value)| (key, Value::String(value)))
                .collect(),
        );
    }
    let prompt = run
        .send("prompts/get", run.session.get_prompt(params))
        .await?;
    run.print(&prompt, |prompt| {
        let prompt = to_json(prompt);
        let mut out = String::new();
        if let Some(description) = prompt["description"].as_str() {
            out.push_str(&format!("# {description}\n"));
        }
        for message in prompt["messages"].as_array().into_iter().flatten() {
            // A message holds one content block (a list in some revisions): both are shown.
            let blocks = match &message["content"] {
                Value::Array(blocks) => blocks.clone(),
                block => vec![block.clone()],
            };
            let body = contents(&blocks, &mut Saver::new(None))?;
            let role = crate::escape::field(str_of(message, "role"));
            out.push_str(&format!("\n[{role}]\n{body}\n"));
        }
        Ok(out)
    })
}
