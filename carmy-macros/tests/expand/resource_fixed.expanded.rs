// `#[resource]` on the function of resource_fixed.rs, formatted. Regenerate with
// `CARMY_EXPAND=overwrite cargo test -p carmy-macros snapshots`.

/// The store's logo.
#[allow(non_camel_case_types)]
#[derive(
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::fmt::Debug,
    ::core::default::Default,
)]
pub struct logo;
impl logo {
    /// The store's logo.
    #[allow(clippy::unused_async)]
    pub async fn call(ctx: &Context) -> Result<Vec<u8>, AgentError> {
        tracing::info!(principal = ctx.principal(), "logo read");
        Ok(LOGO.to_vec())
    }
}
const _: () = {
    use ::carmy::__private as __carmy;
    impl ::core::ops::Deref for logo {
        type Target = fn(
            &Context,
        ) -> __carmy::BoxFuture<'_, Result<Vec<u8>, AgentError>>;
        fn deref(&self) -> &Self::Target {
            &((|__carmy_context| __carmy::box_future(logo::call(__carmy_context)))
                as Self::Target)
        }
    }
    impl __carmy::Resource for logo {
        type Input = __carmy::NoInput;
        type Output = Vec<u8>;
        const SPEC: __carmy::ResourceSpec = __carmy::ResourceSpec::new(
                "logo",
                "shop://brand/logo.png",
            )
            .title("Logo")
            .description("The store's logo.")
            .mime_type("image/png")
            .timeout(::core::time::Duration::from_millis(2000));
        async fn read(
            &self,
            _: Self::Input,
            __carmy_invocation: __carmy::Invocation,
        ) -> __carmy::Result<Self::Output, __carmy::AgentError> {
            let __carmy_result = (*logo)(
                    <Context as __carmy::ContextParam>::borrowed(&__carmy_invocation),
                )
                .await;
            __carmy::into_agent_result(__carmy_result)
        }
    }
};
