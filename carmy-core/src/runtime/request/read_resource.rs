//! `resources/read`: the URI of a resource.

use super::{Operation, Request, sealed::Sealed};

/// A resource read: the URI. Built by [`Request::read`].
#[derive(Debug)]
pub struct ReadResource {
    pub(in crate::runtime) uri: String,
}

impl Sealed for ReadResource {}

impl Operation for ReadResource {
    const METHOD: &'static str = "resources/read";

    fn target(&self) -> &str {
        &self.uri
    }
}

impl Request<ReadResource> {
    /// A read of `uri`, anonymous.
    ///
    /// ```
    /// use carmy_core::{Context, Request};
    ///
    /// let request = Request::read("shop://products/sku-001")
    ///     .context(Context::new().with_principal("alice"));
    /// assert_eq!(request.uri(), "shop://products/sku-001");
    /// ```
    pub fn read(uri: impl Into<String>) -> Self {
        Self::of(ReadResource { uri: uri.into() })
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.operation.uri
    }
}
