//! [`RateLimits`]: how the runtime takes a call from a tool's bucket: from the shared store
//! when it has one, from this process's bucket when it has none or the store cannot answer.

use std::{
    sync::{Arc, Mutex},
    time::Instant,
};

use super::{DynRateLimitStore, FALLBACK_WARNING_EVERY};
use crate::{error::AgentError, rate_buckets::ToolRateLimiter, sync::lock};

/// The runtime's rate-limit store, if it has one. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct RateLimits {
    /// `None`: every bucket is this process's.
    store: Option<Arc<dyn DynRateLimitStore>>,
    /// When the store's failure was last logged.
    warned: Arc<Mutex<Option<Instant>>>,
}

impl RateLimits {
    /// The buckets of `store`, shared by every runtime that uses it.
    pub(crate) fn shared(store: Arc<dyn DynRateLimitStore>) -> Self {
        Self {
            store: Some(store),
            warned: Arc::default(),
        }
    }

    /// Takes one call of `tool` by `principal` from its bucket, or refuses it with
    /// `RATE_LIMITED`. `local` is the tool's own buckets in this process: the only ones without
    /// a store (checked in place: no store call, no allocation), the fallback when the store
    /// cannot answer.
    pub(crate) async fn take(
        &self,
        local: &ToolRateLimiter,
        tool: &str,
        principal: Option<Arc<str>>,
    ) -> Result<(), AgentError> {
        let Some(store) = &self.store else {
            return local.check(tool, principal);
        };
        let limit = local.limit();
        match store.take_boxed(tool, principal.as_deref(), limit).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(wait)) => Err(AgentError::tool_rate_limited(tool, limit, wait)),
            Err(error) => {
                self.warn(tool, &error);
                local.check(tool, principal)
            }
        }
    }

    /// Logs that the store failed, unless that was logged less than
    /// [`FALLBACK_WARNING_EVERY`] ago: an outage fails every call, and one line says it.
    fn warn(&self, tool: &str, error: &crate::idempotency::StoreError) {
        let now = Instant::now();
        {
            let mut warned = lock(&self.warned);
            if warned.is_some_and(|last| now.duration_since(last) < FALLBACK_WARNING_EVERY) {
                return;
            }
            *warned = Some(now);
        }
        tracing::warn!(
            %error,
            tool,
            "the rate-limit store could not answer; calls are limited by this process's own \
             buckets until it does"
        );
    }
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("shared", &self.store.is_some())
            .finish()
    }
}
