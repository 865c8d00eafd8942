//! Files that hold secrets (bearer tokens, sealing keys): read only when no other user can.

use std::path::Path;

/// The text of the `what` file at `path`, refused when other users may read it: a secret
/// another account can read is no secret.
pub(super) fn read(path: &Path, what: &str) -> Result<String, String> {
    let shown = path.display();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|error| format!("cannot read the {what} {shown}: {error}"))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(format!(
                "the {what} {shown} is readable by other users (mode {:o}); chmod 600 it",
                mode & 0o777
            ));
        }
    }
    std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read the {what} {shown}: {error}"))
}
