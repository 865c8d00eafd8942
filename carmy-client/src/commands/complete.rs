//! `complete`: what a server suggests for an argument being typed.

use rmcp::model::{ArgumentInfo, CompleteRequestParams, CompletionContext, Reference};

use super::Run;
use crate::{args::Complete, exit::Outcome};

pub(super) async fn complete(run: &Run, args: &Complete) -> Outcome {
    let reference = match (&args.prompt, &args.template) {
        (Some(prompt), _) => Reference::for_prompt(prompt.clone()),
        // clap requires exactly one of the two (src/args.rs).
        (None, template) => Reference::for_resource(template.clone().unwrap_or_default()),
    };
    let mut params = CompleteRequestParams::new(
        reference,
        ArgumentInfo::new(args.argument.clone(), args.value.clone()),
    );
    if let Some(context) = &args.context {
        let arguments = super::string_object(context, "--context")?;
        params = params.with_context(CompletionContext::with_arguments(arguments));
    }
    let completed = run
        .send("completion/complete", run.session.peer().complete(params))
        .await?;
    run.print(&completed, |completed| {
        let completion = &completed.completion;
        // One value a line: a value cannot pass for two.
        let mut out = completion
            .values
            .iter()
            .map(|value| crate::escape::field(value))
            .collect::<Vec<_>>()
            .join("\n");
        if !out.is_empty() {
            out.push('\n');
        }
        if completion.has_more == Some(true) {
            let total = completion
                .total
                .map(|total| format!(" ({total} in all)"))
                .unwrap_or_default();
            out.push_str(&format!("… more{total}\n"));
        }
        Ok(out)
    })
}
