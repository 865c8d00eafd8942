//! `list-resources`, `list-templates`, `read-resource`.

use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};

use super::{Run, str_of, to_json};
use crate::{
    args::ReadResource,
    exit::Outcome,
    render::{Saver, Table, one_line, resource_contents},
};

pub(super) async fn list(run: &Run) -> Outcome {
    let peer = run.session.peer();
    let resources = super::pagination::every_page(run, "resources/list", |params| async move {
        let page = peer.list_resources(params).await?;
        Ok((page.resources, page.next_cursor))
    })
    .await?;
    let listed = json!({ "resources": resources });
    run.print(&listed, |listed| {
        let mut table = Table::new(&["URI", "NAME", "MIME", "DESCRIPTION"]);
        for resource in listed["resources"].as_array().into_iter().flatten() {
            table.row(vec![
                str_of(resource, "uri").to_owned(),
                str_of(resource, "name").to_owned(),
                str_of(resource, "mimeType").to_owned(),
                one_line(str_of(resource, "description"), 60),
            ]);
        }
        Ok(table.render("(no resources)"))
    })
}

pub(super) async fn templates(run: &Run) -> Outcome {
    let peer = run.session.peer();
    let templates =
        super::pagination::every_page(run, "resources/templates/list", |params| async move {
            let page = peer.list_resource_templates(params).await?;
            Ok((page.resource_templates, page.next_cursor))
        })
        .await?;
    let listed = json!({ "resourceTemplates": templates });
    run.print(&listed, |listed| {
        let mut table = Table::new(&["URI TEMPLATE", "NAME", "MIME", "DESCRIPTION"]);
        for template in listed["resourceTemplates"].as_array().into_iter().flatten() {
            table.row(vec![
                str_of(template, "uriTemplate").to_owned(),
                str_of(template, "name").to_owned(),
                str_of(template, "mimeType").to_owned(),
                one_line(str_of(template, "description"), 60),
            ]);
        }
        Ok(table.render("(no resource templates)"))
    })
}

pub(super) async fn read(run: &Run, args: &ReadResource) -> Outcome {
    // The session's `read_resource` answers the server's questions (`input_required`) through
    // the handler, as a call does.
    let read = run
        .send(
            "resources/read",
            run.session
                .read_resource(ReadResourceRequestParams::new(args.uri.clone())),
        )
        .await?;
    let mut saver = Saver::new(args.output.as_deref());
    run.print(&read, |read| {
        let read = to_json(read);
        let items: Vec<Value> = read["contents"].as_array().cloned().unwrap_or_default();
        resource_contents(&items, &mut saver)
    })
}
