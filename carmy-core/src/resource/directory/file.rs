//! Reading one file: reached below the root (`open.rs`), the size limit, then text or bytes.

use std::io::{self, Read};

use super::{
    Settings, codes, mime,
    open::{self, Reached, Unreached},
    uri,
};
use crate::{
    context::Context,
    error::AgentError,
    excerpt::excerpt,
    resource::{Content, Contents},
};

/// How much of a URI an error message quotes.
const MAX_ECHO: usize = 256;

/// The contents of the file that `segments` (checked by `uri::locate`) name under the root,
/// read for the caller of `context`.
pub(super) fn read(
    settings: &Settings,
    uri: &str,
    segments: &[String],
    context: &Context,
) -> Result<Contents, AgentError> {
    let echo = excerpt(uri, MAX_ECHO);
    let Reached {
        file,
        metadata,
        relative,
    } = reach(settings, &echo, segments, context)?;
    let too_large = |size: u64| {
        AgentError::validation(
            codes::FILE_TOO_LARGE,
            format!(
                "`{echo}` is {size} bytes; this server reads files of at most {} bytes",
                settings.max_file_bytes
            ),
        )
        .with_details(serde_json::json!({
            "uri": echo,
            "size": size,
            "max_file_bytes": settings.max_file_bytes,
        }))
    };
    if metadata.len() > settings.max_file_bytes {
        return Err(too_large(metadata.len()));
    }
    // The file may have grown since: never read past the limit.
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(settings.max_file_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| io_error(&echo, &error))?;
    if bytes.len() as u64 > settings.max_file_bytes {
        return Err(too_large(bytes.len() as u64));
    }
    // The type of the file reached: a link's own name says nothing of it.
    let name = relative.rsplit('/').next().unwrap_or_default();
    Ok(content(mime::of(name), bytes).into())
}

/// Whether the file that `segments` name could be read: `Ok`, or the error a read would give
/// (its size aside). The file is opened, not read.
pub(super) fn check(
    settings: &Settings,
    uri: &str,
    segments: &[String],
    context: &Context,
) -> Result<(), AgentError> {
    reach(settings, &excerpt(uri, MAX_ECHO), segments, context).map(drop)
}

/// The file that `segments` name, open; or why it cannot be served (a symbolic link leading
/// outside or where the caller may not read, a hidden name, no such file, not a plain file).
fn reach(
    settings: &Settings,
    echo: &str,
    segments: &[String],
    context: &Context,
) -> Result<Reached, AgentError> {
    // The rules are written on the URIs the listing gives: the path reached, in that form.
    let allowed = |relative: &str| {
        context.allows_resource(&uri::uri_of(&format!("{}/{relative}", settings.root_text)))
    };
    open::open(settings, segments, allowed).map_err(|unreached| match unreached {
        Unreached::NotFound => AgentError::resource_not_found(echo),
        Unreached::NotAllowed => AgentError::resource_not_allowed(echo),
        Unreached::Outside => AgentError::not_found(
            codes::OUTSIDE_ROOT,
            format!("`{echo}` leads outside the served directory (through a symbolic link)"),
        )
        .with_details(serde_json::json!({ "uri": echo })),
        Unreached::Unreadable(error) => io_error(echo, &error),
    })
}

/// Text when the type is text (or unknown) and the bytes are UTF-8; bytes otherwise.
fn content(mime: Option<&'static str>, bytes: Vec<u8>) -> Content {
    match mime {
        Some(mime) if mime::is_text(mime) => match String::from_utf8(bytes) {
            Ok(text) => Content::text(text),
            Err(error) => Content::blob(error.into_bytes()),
        }
        .mime_type(mime),
        Some(mime) => Content::blob(bytes).mime_type(mime),
        // Unknown: sniffed. UTF-8 without NUL bytes reads as text.
        None if !bytes.contains(&0) => match String::from_utf8(bytes) {
            Ok(text) => Content::text(text).mime_type("text/plain"),
            Err(error) => Content::blob(error.into_bytes()).mime_type("application/octet-stream"),
        },
        None => Content::blob(bytes).mime_type("application/octet-stream"),
    }
}

fn io_error(echo: &str, error: &io::Error) -> AgentError {
    match error.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => {
            AgentError::resource_not_found(echo)
        }
        io::ErrorKind::PermissionDenied => AgentError::permission(
            codes::FILE_UNREADABLE,
            format!("`{echo}` cannot be read: permission denied"),
        ),
        _ => AgentError::unavailable(
            codes::FILE_UNREADABLE,
            format!("`{echo}` cannot be read: {error}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Body;

    #[test]
    fn text_is_text_only_when_its_type_and_bytes_say_so() {
        let text = content(Some("text/markdown"), b"# Hi".to_vec());
        assert_eq!(
            (text.body(), text.mime_type_of()),
            (&Body::Text("# Hi".into()), Some("text/markdown"))
        );
        let latin1 = content(Some("text/plain"), vec![0xe9]);
        assert_eq!(latin1.body(), &Body::Blob(vec![0xe9]));
        let png = content(Some("image/png"), b"plain ascii".to_vec());
        assert_eq!(png.body(), &Body::Blob(b"plain ascii".to_vec()));
        let unknown = content(None, b"make all".to_vec());
        assert_eq!(
            (unknown.body(), unknown.mime_type_of()),
            (&Body::Text("make all".into()), Some("text/plain"))
        );
        let binary = content(None, vec![0, 1, 2]);
        assert_eq!(
            (binary.body(), binary.mime_type_of()),
            (&Body::Blob(vec![0, 1, 2]), Some("application/octet-stream"))
        );
    }
}
