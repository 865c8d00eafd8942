//! rmcp's side of a session: the client's messages in, as its `POST`s hand them over, and the
//! server's out, into the session's [`Outbox`].

use std::{future::Future, sync::Arc};

use rmcp::{
    RoleServer,
    model::{ClientJsonRpcMessage, ServerJsonRpcMessage},
    transport::Transport,
};
use tokio::sync::mpsc;

use super::outbox::{Outbox, StreamEnded};

pub(super) struct SessionTransport {
    pub(super) incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    pub(super) outbox: Arc<Outbox>,
}

impl Transport<RoleServer> for SessionTransport {
    type Error = StreamEnded;

    fn send(
        &mut self,
        message: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), StreamEnded>> + Send + 'static {
        // Queued at once: the outbox keeps the bound (see there).
        std::future::ready(self.outbox.push(&message))
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), StreamEnded> {
        self.outbox.close();
        Ok(())
    }
}

impl Drop for SessionTransport {
    fn drop(&mut self) {
        // rmcp's session ended: the stream ends once what waits is sent.
        self.outbox.close();
    }
}
