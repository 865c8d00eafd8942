//! Reading one message per line from a byte stream, never buffering more than the limit: an
//! over-long line is cut off after its head (where its `id` usually is) and skipped to its end.

use std::io;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use super::scan::leading_id;

/// How much of an over-long line is kept to find its `id`, so the error can name the request.
const ID_SCAN_BYTES: usize = 64 * 1024;
/// Reads are buffered in chunks of this size.
const READ_CHUNK: usize = 64 * 1024;

/// Lines from a byte stream.
pub(super) struct Lines<R> {
    reader: BufReader<R>,
    /// The line being read. Survives a cancelled `next` (rmcp polls `receive` inside
    /// `select!`), so a partial line is resumed, never lost.
    line: Vec<u8>,
    /// Skipping the tail of an over-long line until its newline.
    discarding: bool,
    /// Bytes after which a line is refused.
    pub(super) max_line_bytes: usize,
}

impl<R> Lines<R> {
    /// Bytes of the line being read.
    pub(super) fn buffered(&self) -> usize {
        self.line.len()
    }
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub(super) fn new(read: R, max_line_bytes: usize) -> Self {
        Self {
            reader: BufReader::with_capacity(READ_CHUNK, read),
            line: Vec::new(),
            discarding: false,
            max_line_bytes,
        }
    }

    /// The line [`next`](Self::next) read, until it is cleared.
    pub(super) fn line(&self) -> &[u8] {
        &self.line
    }

    /// Forgets the line read, keeping the buffer.
    pub(super) fn clear(&mut self) {
        self.line.clear();
    }

    /// Reads up to the next newline without letting `self.line` grow past the limit.
    /// Cancellation-safe: bytes are moved from the reader into `self.line` with no await between
    /// the copy and the `consume`.
    pub(super) async fn next(&mut self) -> LineRead {
        loop {
            let (consumed, step) = {
                let available = match self.reader.fill_buf().await {
                    Ok(available) => available,
                    Err(error) => return LineRead::Io(error),
                };
                if available.is_empty() {
                    // A last message without its newline still counts.
                    return if self.line.is_empty() || self.discarding {
                        LineRead::Eof
                    } else {
                        LineRead::Line
                    };
                }
                let newline = available.iter().position(|&byte| byte == b'\n');
                let content = newline.unwrap_or(available.len());
                let consumed = newline.map_or(available.len(), |at| at + 1);
                let step = if self.discarding {
                    if newline.is_some() {
                        Step::EndDiscard
                    } else {
                        Step::More
                    }
                } else if self.line.len().saturating_add(content) > self.max_line_bytes {
                    // Keep the head of the line: the request id is usually there.
                    let room = ID_SCAN_BYTES.saturating_sub(self.line.len());
                    self.line.extend_from_slice(&available[..content.min(room)]);
                    Step::Oversized {
                        ends_here: newline.is_some(),
                    }
                } else {
                    self.line.extend_from_slice(&available[..content]);
                    if newline.is_some() {
                        Step::Line
                    } else {
                        Step::More
                    }
                };
                (consumed, step)
            };
            self.reader.consume(consumed);
            match step {
                Step::Line => return LineRead::Line,
                Step::More => {}
                Step::EndDiscard => self.discarding = false,
                Step::Oversized { ends_here } => {
                    let head = &self.line[..self.line.len().min(ID_SCAN_BYTES)];
                    let id = leading_id(head);
                    self.line.clear();
                    self.discarding = !ends_here;
                    return LineRead::Oversized { id };
                }
            }
        }
    }
}

pub(super) enum LineRead {
    /// A whole message is in `line` (without its newline).
    Line,
    /// A line over the limit was dropped; `id` is its request id, if it could be found.
    Oversized {
        id: Value,
    },
    Eof,
    Io(io::Error),
}

enum Step {
    Line,
    More,
    EndDiscard,
    Oversized { ends_here: bool },
}
