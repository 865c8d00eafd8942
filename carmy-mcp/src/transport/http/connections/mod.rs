//! Accepting connections: HTTP/1.1 with hyper, a deadline for each request head and for each
//! write, at most so many connections open, room made for a new one by closing one whose client
//! is doing nothing with it, and an immediate answer when there is no room to make.
//!
//! A request head that never completes costs a connection and a file descriptor until its
//! deadline ([`header_read_timeout`](super::HttpServer::header_read_timeout), counted from the
//! head's first byte). Under a flood of them the deadline alone is not enough: until it passes,
//! they would fill the cap (or the process's open-files limit) and nobody else, `/health`
//! included, could connect. So a connection that is not serving a request is always the first
//! to go: when the cap or the open-files limit is reached, the oldest such connection is closed
//! to make room, as nginx does with its idle ones. The heads of an honest client arrive in one
//! packet, so they are never the oldest waiting for long.
//!
//! An answer its client does not read is the same attack from the other side: the request is
//! over, but its answer sits in the connection's buffers. Each write gets a deadline
//! ([`write_timeout`](super::HttpServer::write_timeout), counted while the client takes no
//! bytes, as nginx's `send_timeout`), and a connection whose writes have stalled is the next
//! closed for room after those waiting for a request. Any other request in progress (a call, a
//! session's stream) is never closed for room; its own deadline bounds it.
//!
//! When every connection is busy, the accept loop does not wait for one to end: it answers the
//! new connection at once (`503` with `Retry-After`, `/health` as usual, `overflow.rs`) and
//! closes it, so a server held by slow calls or long streams still says so.
//!
//! Why not hyper's own `header_read_timeout`: its clock starts when the connection starts
//! waiting for a head, so it also closes a kept-alive connection that is merely quiet, which
//! clients that hold one connection across a pause do not expect. A quiet connection costs
//! little and is the first closed for room; a head that has started and stalls is the attack.
//! hyper has no deadline for writes.
//!
//! `table.rs` keeps the open connections and makes the room.

mod overflow;
mod table;

use std::{
    convert::Infallible,
    future::Future,
    io,
    net::SocketAddr,
    pin::{Pin, pin},
    sync::Arc,
    task::{Context as TaskContext, Poll},
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::ConnectInfo,
    response::Response,
};
use http_body::{Frame, SizeHint};
use hyper::{body::Incoming, server::conn::http1};
use hyper_util::rt::TokioIo;
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
    time::Instant,
};
use tokio_util::sync::CancellationToken;
use tower_service::Service as _;

use self::{
    overflow::Overflow,
    table::{BusyGuard, Slot, Table},
};

/// The bounds on connections.
#[derive(Clone, Copy, Debug)]
pub(super) struct ConnectionLimits {
    /// Connections open at once.
    pub(super) max_connections: usize,
    /// How long a request head may take to arrive.
    pub(super) header_read_timeout: Duration,
    /// How long a write may wait for the client to take bytes.
    pub(super) write_timeout: Duration,
}

/// The largest request head read (`431` past it), and the largest read buffer of a connection:
/// hyper's own default is ~400 KiB per connection, which a flood of large, slow heads would
/// multiply by the connection cap.
pub(super) const MAX_HEAD_BYTES: usize = 64 * 1024;

/// After an accept error other than running out of descriptors, how long to wait before
/// accepting again; and how long a connection closed to free a descriptor gets to close.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// Out of descriptors with every connection busy: how long to wait before trying again.
const DESCRIPTOR_BACKOFF: Duration = Duration::from_secs(1);

/// Serves `router` on `listener` until `stop`, then lets every connection finish its request
/// in progress (hyper's graceful shutdown) and returns once all are closed. Dropping the
/// returned future closes them all at once. A connection there is no room for is served
/// `overflow` instead, once.
pub(super) async fn serve(
    listener: TcpListener,
    router: Router,
    overflow: Router,
    limits: ConnectionLimits,
    stop: CancellationToken,
) -> io::Result<()> {
    let table = Arc::new(Table::new(limits.max_connections));
    let overflow = Arc::new(Overflow::new(
        overflow,
        limits.max_connections,
        limits.header_read_timeout,
    ));
    let mut http = http1::Builder::new();
    // Without a timer hyper applies no header deadline of its own: ours is in `run`.
    http.header_read_timeout(None)
        .max_header_size(MAX_HEAD_BYTES)
        .max_buf_size(MAX_HEAD_BYTES);
    let graceful = CancellationToken::new();
    let close_all = CancellationToken::new();
    let _close_all = close_all.clone().drop_guard();
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) if out_of_descriptors(&error) => {
                if !table.make_room_for_descriptor(ACCEPT_BACKOFF).await {
                    tracing::warn!(%error, "out of file descriptors, and every connection is busy");
                    tokio::time::sleep(DESCRIPTOR_BACKOFF).await;
                }
                continue;
            }
            // The client gave up before it was accepted.
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                tracing::error!(%error, "accepting a connection failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        // Answers on an event stream go out in several writes (the head, then each event):
        // with Nagle's algorithm on, each after the first would wait for the client's delayed
        // acknowledgement, tens of milliseconds per answer.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot turn Nagle's algorithm off for a connection");
        }
        let Some(slot) = table.admit() else {
            overflow.answer(stream);
            continue;
        };
        let connection = http.serve_connection(
            TokioIo::new(Watched {
                stream,
                slot: slot.clone(),
            }),
            PerConnection {
                router: router.clone(),
                slot: slot.clone(),
                peer,
            },
        );
        tokio::spawn(run(
            connection,
            slot,
            limits,
            graceful.clone(),
            close_all.clone(),
        ));
    }
    drop(listener);
    graceful.cancel();
    table.all_closed().await;
    Ok(())
}

/// One connection, until it ends, its request head or a write is late, it is closed for room,
/// or the server closes everything.
///
/// The loop wakes at every step of every request on the connection, so what it waits on is
/// made once: tokens of the connection's own (children of the server's, which every
/// connection would otherwise lock at each wake-up) and futures that stay registered.
async fn run(
    connection: http1::Connection<TokioIo<Watched>, PerConnection>,
    slot: Arc<Slot>,
    limits: ConnectionLimits,
    graceful: CancellationToken,
    close_all: CancellationToken,
) {
    let ConnectionLimits {
        header_read_timeout,
        write_timeout,
        ..
    } = limits;
    let mut connection = pin!(connection);
    let mut shutting_down = false;
    let late = tokio::time::sleep(Duration::MAX);
    let mut late = pin!(late);
    let mut head_deadline = None;
    let stalled_too_long = tokio::time::sleep(Duration::MAX);
    let mut stalled_too_long = pin!(stalled_too_long);
    let mut write_deadline = None;
    let mut write_stalled = pin!(slot.write_stalled.notified());
    let (graceful, close_all) = (graceful.child_token(), close_all.child_token());
    let mut head_started = pin!(slot.head_started.notified());
    let mut evicted = pin!(slot.evict().cancelled());
    let mut closed = pin!(close_all.cancelled());
    let mut draining = pin!(graceful.cancelled());
    loop {
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(error) = served {
                    tracing::debug!(%error, "connection ended");
                }
                break;
            }
            () = head_started.as_mut() => {
                head_started.set(slot.head_started.notified());
                head_deadline = slot.head_deadline(header_read_timeout);
                if let Some(deadline) = head_deadline {
                    late.as_mut().reset(deadline);
                }
            }
            () = late.as_mut(), if head_deadline.is_some() => {
                // The head may have arrived since; then this deadline is stale.
                head_deadline = slot.head_deadline(header_read_timeout);
                match head_deadline {
                    Some(deadline) if deadline <= Instant::now() => {
                        tracing::debug!("a request head did not arrive in time: closing its connection");
                        break;
                    }
                    Some(deadline) => late.as_mut().reset(deadline),
                    None => {}
                }
            }
            () = write_stalled.as_mut() => {
                write_stalled.set(slot.write_stalled.notified());
                write_deadline = slot.write_deadline(write_timeout);
                if let Some(deadline) = write_deadline {
                    stalled_too_long.as_mut().reset(deadline);
                }
            }
            () = stalled_too_long.as_mut(), if write_deadline.is_some() => {
                // Writes may have gone through since, or stalled anew.
                write_deadline = slot.write_deadline(write_timeout);
                match write_deadline {
                    Some(deadline) if deadline <= Instant::now() => {
                        tracing::debug!("a client took no bytes in time: closing its connection");
                        break;
                    }
                    Some(deadline) => stalled_too_long.as_mut().reset(deadline),
                    None => {}
                }
            }
            () = evicted.as_mut() => {
                tracing::debug!("closing a connection its client does nothing with, to make room");
                break;
            }
            () = closed.as_mut() => break,
            () = draining.as_mut(), if !shutting_down => {
                shutting_down = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// A connection's socket, telling its slot when the bytes of a new request head arrive, and
/// whether its writes go through.
struct Watched {
    stream: TcpStream,
    slot: Arc<Slot>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.slot.bytes_arrived();
        }
        read
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.watch_write(&written);
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.watch_write(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl Watched {
    /// A write that cannot go on until the client reads stalls; one that took bytes ends the
    /// stall.
    fn watch_write(&self, written: &Poll<io::Result<usize>>) {
        match written {
            Poll::Pending => self.slot.write_blocked(),
            Poll::Ready(Ok(written)) if *written > 0 => self.slot.write_went_through(),
            Poll::Ready(_) => {}
        }
    }
}

/// Linux and the BSDs: `EMFILE` (the process's limit) and `ENFILE` (the system's).
fn out_of_descriptors(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(23 | 24))
}

fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// The router, seen by one connection: while it serves a request, the connection is busy and
/// not closed for room.
#[derive(Clone)]
struct PerConnection {
    router: Router,
    slot: Arc<Slot>,
    /// The client's address, for what limits per address: given to each request as axum's
    /// `ConnectInfo`, as `axum::serve` does.
    peer: SocketAddr,
}

impl hyper::service::Service<http::Request<Incoming>> for PerConnection {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, mut request: http::Request<Incoming>) -> Self::Future {
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let busy = self.slot.busy();
        let mut router = self.router.clone();
        let answered = router.call(request.map(Body::new));
        Box::pin(async move {
            let response = answered.await?;
            // Busy until the answer is sent (or dropped): a stream keeps its connection busy.
            Ok(response.map(|body| Body::new(Busy { body, _busy: busy })))
        })
    }
}

/// A response body that keeps its connection busy.
struct Busy {
    body: Body,
    _busy: BusyGuard,
}

impl http_body::Body for Busy {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
