//! Results as people read them. Everything here works on the JSON the server sent, not on
//! rmcp's types, so that fields a newer server adds, or a non-Carmy server fills differently,
//! are shown rather than lost.

mod content;
mod table;

pub(crate) use content::{Saver, contents, resource_contents};
pub(crate) use table::{Table, one_line};
