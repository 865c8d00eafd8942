//! Every page of a list (`tools/list`, `resources/list`, …), up to `--max-pages`.
//!
//! rmcp's `list_all_*` follow `nextCursor` for as long as the server sends one, so a server that
//! always does keeps carmy listing, and its memory growing, for ever. carmy follows the cursor
//! itself and gives up past the limit: a list that long is either hostile or not something to
//! read on a terminal.

use std::future::Future;

use rmcp::model::{Cursor, PaginatedRequestParams};

use super::Run;
use crate::exit::Failure;

/// The items of every page of `method`: `page` asks for the one at a cursor and returns its
/// items and the next cursor.
pub(super) async fn every_page<T, Page>(
    run: &Run,
    method: &str,
    mut page: impl FnMut(Option<PaginatedRequestParams>) -> Page,
) -> Result<Vec<T>, Failure>
where
    Page: Future<Output = Result<(Vec<T>, Option<Cursor>), rmcp::ServiceError>>,
{
    let mut items = Vec::new();
    let mut params = None;
    for _ in 0..run.max_pages {
        let (page_items, next) = run.send(method, page(params.take())).await?;
        items.extend(page_items);
        let Some(next) = next else {
            return Ok(items);
        };
        params = Some(PaginatedRequestParams::default().with_cursor(Some(next)));
    }
    Err(Failure::Server(format!(
        "the server's {method} did not end within {} pages; --max-pages N follows more",
        run.max_pages
    )))
}
