//! The store's file is its owner's alone: it holds every call's arguments and outcomes.
//!
//! SQLite creates a new database with the permissions the umask leaves (`0644` under the usual
//! one), and each companion it creates beside it (`-wal`, `-shm`, `-journal`) with the
//! database's own permissions, whatever the umask. So the store creates the file itself,
//! private, before SQLite opens it: the companions follow.

use std::{fs::OpenOptions, io, path::Path};

/// Creates `path` empty, readable and writable by its owner alone whatever the umask, unless
/// something is there already: a file that exists keeps the permissions it has. SQLite reads
/// an empty file as a new database.
pub(super) fn create_private(path: &Path) -> io::Result<()> {
    // SQLite's own names for a database in memory and a temporary one: no file of that name.
    if path.as_os_str().is_empty() || path.as_os_str() == ":memory:" {
        return Ok(());
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(file) => {
            // The umask may have taken bits from the mode `open` was given; the file is new
            // and ours, so its mode is set outright.
            #[cfg(unix)]
            file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
            drop(file);
            Ok(())
        }
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    /// The permission bits of `path`, in octal.
    fn mode(path: &std::path::Path) -> String {
        let mode = std::fs::metadata(path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
            .permissions()
            .mode();
        format!("{:o}", mode & 0o777)
    }

    /// A directory of the test's own.
    fn scratch() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "carmy-store-private-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).expect("a directory");
        dir
    }

    #[test]
    fn a_rollback_journal_takes_the_file_s_permissions_too() {
        let dir = scratch();
        let path = dir.join("journal.sqlite");
        super::create_private(&path).expect("created");
        let connection = rusqlite::Connection::open(&path).expect("opens");
        connection
            .execute_batch(
                "PRAGMA journal_mode = DELETE; CREATE TABLE t (x); BEGIN; INSERT INTO t VALUES (1);",
            )
            .expect("a transaction writes");
        let journal = dir.join("journal.sqlite-journal");
        assert_eq!(mode(&journal), "600", "{}", journal.display());
        connection.execute_batch("ROLLBACK").expect("rolled back");
        drop(connection);
        std::fs::remove_dir_all(&dir).ok();
    }
}
