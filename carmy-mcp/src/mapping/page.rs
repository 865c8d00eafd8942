//! Pagination of `*/list` results: pages of a fixed size, in catalog order, the cursor an
//! opaque position.

use rmcp::model::ErrorData;
use serde_json::json;

/// Items per page.
pub(crate) const PAGE_SIZE: usize = 100;

/// One page, and the cursor of the next one if there is more.
pub(crate) struct Page<T> {
    pub(crate) items: Vec<T>,
    pub(crate) next: Option<String>,
}

/// The page of `all` that `cursor` (from an earlier page, or none for the first) starts.
pub(crate) fn of<T: Clone>(all: &[T], cursor: Option<&str>) -> Result<Page<T>, ErrorData> {
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .strip_prefix("p")
            .and_then(|at| at.parse::<usize>().ok())
            .filter(|&at| at > 0 && at < all.len())
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    "invalid cursor: pass the `nextCursor` of the previous page as it is",
                    Some(json!({ "field": "cursor" })),
                )
            })?,
    };
    let end = all.len().min(start + PAGE_SIZE);
    Ok(Page {
        items: all[start..end].to_vec(),
        next: (end < all.len()).then(|| format!("p{end}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cover_everything_once_in_order() {
        let all: Vec<u32> = (0..250).collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let page = of(&all, cursor.as_deref()).unwrap();
            seen.extend(page.items);
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, all);
        let small = of(&all[..3], None).unwrap();
        assert_eq!((small.items.len(), small.next), (3, None));
        for bad in ["", "p", "p0", "p250", "p9999", "42", "pxyz"] {
            assert!(of(&all, Some(bad)).is_err(), "{bad}");
        }
    }
}
