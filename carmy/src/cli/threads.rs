//! The threads a command line's tokio runtime has: chosen from the transport it serves and
//! `server.worker_threads`.

use super::config::Transport;

/// The threads a command line's tokio runtime has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Threads {
    /// A current-thread runtime.
    One,
    /// A multi-threaded runtime with a worker per core.
    PerCore,
    /// A multi-threaded runtime with this many workers.
    Workers(usize),
}

impl Threads {
    /// For `transport` (none: a subcommand that does not serve) and `server.worker_threads`.
    /// Many connections share a multi-threaded runtime. One stdio connection is served from one
    /// thread: its messages pass through one serve loop, and spreading its tasks over worker
    /// threads costs more than a second core gives; the session's own call thread takes the
    /// calls that pile up instead (bench/README.md, "Using the second core").
    pub(super) fn for_serving(transport: Option<Transport>, worker_threads: usize) -> Self {
        match (transport, worker_threads) {
            (_, 1) | (None | Some(Transport::Stdio), 0) => Self::One,
            (_, 0) => Self::PerCore,
            (_, threads) => Self::Workers(threads),
        }
    }

    /// The tokio runtime, with IO and time.
    pub(super) fn runtime(self) -> std::io::Result<tokio::runtime::Runtime> {
        let mut builder = match self {
            Self::One => tokio::runtime::Builder::new_current_thread(),
            Self::PerCore => tokio::runtime::Builder::new_multi_thread(),
            Self::Workers(threads) => {
                let mut builder = tokio::runtime::Builder::new_multi_thread();
                builder.worker_threads(threads);
                builder
            }
        };
        builder.enable_all().build()
    }
}

#[cfg(test)]
mod tests {
    use super::{Threads, Transport};

    #[test]
    fn stdio_runs_on_one_thread_and_many_connections_on_a_worker_per_core() {
        assert_eq!(
            Threads::for_serving(Some(Transport::Stdio), 0),
            Threads::One
        );
        // `tools`, `schema`, `call`, `config`, and a configuration that does not load.
        assert_eq!(Threads::for_serving(None, 0), Threads::One);
        for many in [Transport::Http, Transport::Sse, Transport::Unix] {
            assert_eq!(Threads::for_serving(Some(many), 0), Threads::PerCore);
        }
    }

    #[test]
    fn worker_threads_override_the_choice_on_every_transport() {
        assert_eq!(Threads::for_serving(Some(Transport::Http), 1), Threads::One);
        assert_eq!(
            Threads::for_serving(Some(Transport::Stdio), 2),
            Threads::Workers(2)
        );
        assert_eq!(
            Threads::for_serving(Some(Transport::Unix), 6),
            Threads::Workers(6)
        );
    }
}
