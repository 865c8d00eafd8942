//! Middleware: code of the application's that sees every request the runtime serves (tool
//! calls, resource reads, prompt gets, completions) and its answer, around the runtime's own
//! steps.
//!
//! One trait, [`Middleware`], rather than tower layers: the four operations answer with four
//! types ([`Outcome`] of a tool's JSON, of contents, of messages, of completions), so a tower
//! `Service` generic over them would make every middleware generic too. Here a middleware takes
//! the request as an [`Incoming`] (one of the four, with what they share: method, target,
//! trusted context) and hands back an [`Answer`] (one of the four outcomes, with what they
//! share: status, execution id, error). It may:
//! - read the caller and the request;
//! - change the request before passing it on ([`Incoming::with_context`]: bind a tenant from
//!   the caller's token into the context's extensions, never from an argument);
//! - answer without passing it on ([`Incoming::refuse`]);
//! - look at the answer, or replace it ([`Answer::fail`]).
//!
//! Middleware added with [`Carmy::middleware`](crate::Carmy::middleware) runs in the order it
//! was added, the first outermost; the runtime's own steps (access, validation, approval, the
//! request id, admission, the run) run inside the last. A request a middleware refuses never
//! reaches them, so it is not recorded as an execution: the middleware's answer is the record.
//! A runtime without middleware pays one check per request.

mod answer;
mod incoming;

use std::{future::Future, pin::Pin, sync::Arc};

use super::Runtime;

pub use answer::Answer;
pub(super) use answer::FromAnswer;
pub use incoming::Incoming;

/// Code that sees every request the runtime serves, and its answer (see the
/// [module](self)).
///
/// ```
/// use std::time::Instant;
/// use carmy_core::{Answer, Incoming, Middleware, Next};
///
/// /// Logs each request's method, target, status and duration.
/// struct Timing;
///
/// impl Middleware for Timing {
///     async fn handle(&self, request: Incoming, next: Next<'_>) -> Answer {
///         let (method, target) = (request.method(), request.target().to_owned());
///         let started = Instant::now();
///         let answer = next.run(request).await;
///         tracing::info!(method, target, status = %answer.status(), elapsed = ?started.elapsed());
///         answer
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a middleware",
    label = "not a middleware",
    note = "implement `async fn handle(&self, request: Incoming, next: Next<'_>) -> Answer` for `{Self}`"
)]
pub trait Middleware: Send + Sync + 'static {
    /// Serves `request`: usually by passing it on with `next.run(request)`, perhaps changed,
    /// and handing back the answer, perhaps changed; or by answering it alone
    /// ([`Incoming::refuse`]).
    fn handle(&self, request: Incoming, next: Next<'_>) -> impl Future<Output = Answer> + Send;
}

/// The middleware after this one, then the runtime's own steps.
#[must_use]
pub struct Next<'a> {
    runtime: &'a Runtime,
    rest: &'a [Arc<dyn DynMiddleware>],
}

impl<'a> Next<'a> {
    pub(in crate::runtime) fn new(runtime: &'a Runtime, all: &'a [Arc<dyn DynMiddleware>]) -> Self {
        Self { runtime, rest: all }
    }

    /// Passes `request` on, and hands back its answer.
    pub async fn run(self, request: Incoming) -> Answer {
        self.step(request).await
    }

    /// Boxed: each middleware's future holds the next one's.
    fn step(self, request: Incoming) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        match self.rest.split_first() {
            Some((first, rest)) => first.handle_boxed(
                request,
                Next {
                    runtime: self.runtime,
                    rest,
                },
            ),
            None => Box::pin(self.runtime.serve(request)),
        }
    }
}

impl std::fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("middleware_left", &self.rest.len())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Serves `request` through the middleware, then the runtime's own steps.
    pub(super) async fn through(&self, request: Incoming) -> Answer {
        Next::new(self, &self.inner.middleware).run(request).await
    }

    /// The runtime's own steps, inside the middleware.
    async fn serve(&self, request: Incoming) -> Answer {
        match request {
            Incoming::CallTool(request) => Box::pin(self.execute_served(request)).await.into(),
            Incoming::ReadResource(request) => Box::pin(self.read_served(request)).await.into(),
            Incoming::GetPrompt(request) => Box::pin(self.get_prompt_served(request)).await.into(),
            Incoming::Complete(request) => Box::pin(self.complete_served(request)).await.into(),
        }
    }
}

/// [`Middleware`] with its future boxed, so that a runtime keeps a list of them.
pub(crate) trait DynMiddleware: Send + Sync + 'static {
    fn handle_boxed<'a>(
        &'a self,
        request: Incoming,
        next: Next<'a>,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;
}

impl<M: Middleware> DynMiddleware for M {
    fn handle_boxed<'a>(
        &'a self,
        request: Incoming,
        next: Next<'a>,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(self.handle(request, next))
    }
}
