//! Unix domain sockets: many clients at once, each a line-delimited MCP session as on stdio.

use std::{
    future::Future,
    io,
    os::unix::{
        fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt},
        net::{UnixListener as StdUnixListener, UnixStream as StdUnixStream},
    },
    path::{Path, PathBuf},
    time::Duration,
};

use tokio::{net::UnixListener, task::JoinSet};

use super::shutdown;
use crate::server::McpServer;

/// A listening Unix socket file, readable and writable by its owner only (mode `0600`) from the
/// moment it appears, and removed when this is dropped.
///
/// [`bind`](Self::bind) replaces a stale socket file (one nobody listens on, left by a crash)
/// and refuses to touch a live one or anything that is not a socket.
#[derive(Debug)]
pub struct UnixSocket {
    listener: Option<StdUnixListener>,
    path: PathBuf,
    /// The socket file's inode, so that drop removes ours and not a successor's.
    inode: u64,
    grace_period: Duration,
}

impl UnixSocket {
    /// Binds `path`. The socket is created in a fresh private directory next to `path`, given
    /// mode `0600` there, then renamed into place, so no other user ever sees it with looser
    /// permissions. Needs no async runtime.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        clear_stale(&path)?;
        let parent = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let staging = parent.join(format!(".carmy-{}.sock.d", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&staging)?;
        let staged = staging.join("s");
        let bound = (|| {
            let listener = StdUnixListener::bind(&staged)?;
            std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))?;
            std::fs::rename(&staged, &path)?;
            listener.set_nonblocking(true)?;
            Ok::<_, io::Error>(listener)
        })();
        let _ = std::fs::remove_file(&staged);
        let _ = std::fs::remove_dir(&staging);
        let listener = bound?;
        let inode = std::fs::symlink_metadata(&path)?.ino();
        Ok(Self {
            listener: Some(listener),
            path,
            inode,
            grace_period: shutdown::DEFAULT_GRACE_PERIOD,
        })
    }

    /// The socket file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// On shutdown, how long running calls get to finish before they are cancelled (10 s).
    #[must_use]
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace_period = grace;
        self
    }
}

impl Drop for UnixSocket {
    fn drop(&mut self) {
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|metadata| metadata.file_type().is_socket() && metadata.ino() == self.inode);
        if ours && let Err(error) = std::fs::remove_file(&self.path) {
            tracing::warn!(path = %self.path.display(), %error, "cannot remove the socket file");
        }
    }
}

/// Removes a socket file nobody listens on; refuses a live socket or a file of another kind.
fn clear_stale(path: &Path) -> io::Result<()> {
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    if !metadata.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket", path.display()),
        ));
    }
    match StdUnixStream::connect(path) {
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("a server is already listening on {}", path.display()),
        )),
        Err(error) if error.kind() == io::ErrorKind::ConnectionRefused => {
            tracing::info!(path = %path.display(), "removing a stale socket file");
            std::fs::remove_file(path)
        }
        Err(error) => Err(error),
    }
}

impl UnixSocket {
    /// Serves `server` on this socket until SIGINT or SIGTERM: each connection is a session
    /// with the same framing guards as stdio, any number at once.
    ///
    /// ```no_run
    /// # async fn demo(server: carmy_mcp::McpServer) -> std::io::Result<()> {
    /// carmy_mcp::UnixSocket::bind("/run/shop/mcp.sock")?.serve(server).await
    /// # }
    /// ```
    pub async fn serve(self, server: McpServer) -> io::Result<()> {
        self.serve_with_shutdown(server, shutdown::signal()).await
    }

    /// Serves `server` until `signal` completes; then stops accepting, lets running calls
    /// finish within the grace period (cancelling them past it), closes the sessions and
    /// removes the socket file.
    pub async fn serve_with_shutdown(
        mut self,
        server: McpServer,
        signal: impl Future<Output = ()>,
    ) -> io::Result<()> {
        let listener = self
            .listener
            .take()
            .expect("a bound socket has its listener");
        let listener = UnixListener::from_std(listener)?;
        let mut sessions = JoinSet::new();
        tokio::pin!(signal);
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let (read, write) = stream.into_split();
                        let server = server.clone();
                        sessions.spawn(async move {
                            if let Err(error) = server.serve_io(read, write).await {
                                tracing::debug!(%error, "a Unix socket session ended on an error");
                            }
                        });
                    }
                    Err(error) => {
                        // Out of descriptors, most likely: wait instead of spinning.
                        tracing::warn!(%error, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
                () = &mut signal => break,
            }
        }
        drop(listener);
        tracing::info!("shutting down: refusing new connections, letting running calls finish");
        shutdown::drain(server.runtime(), self.grace_period, || sessions.abort_all()).await;
        sessions.shutdown().await;
        drop(self);
        Ok(())
    }
}
