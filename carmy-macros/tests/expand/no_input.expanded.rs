// `#[tool]` on the function of no_input.rs, formatted. Regenerate with
// `CARMY_EXPAND=overwrite cargo test -p carmy-macros snapshots`.

/// Is the service up?
#[allow(non_camel_case_types)]
#[derive(
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::fmt::Debug,
    ::core::default::Default,
)]
struct ping;
impl ping {
    /// Is the service up?
    #[allow(clippy::unused_async)]
    async fn call() -> Result<(), AgentError> {
        Ok(())
    }
}
const _: () = {
    use ::carmy::__private as __carmy;
    impl ::core::ops::Deref for ping {
        type Target = fn() -> __carmy::BoxFuture<'static, Result<(), AgentError>>;
        fn deref(&self) -> &Self::Target {
            &((|| __carmy::box_future(ping::call())) as Self::Target)
        }
    }
    impl __carmy::Tool for ping {
        type Input = __carmy::NoInput;
        type Output = ();
        const SPEC: __carmy::ToolSpec = __carmy::ToolSpec::new(
                "ping",
                __carmy::Effect::None,
            )
            .description("Is the service up?");
        async fn run(
            &self,
            _: Self::Input,
            _: __carmy::Invocation,
        ) -> __carmy::Result<Self::Output, __carmy::AgentError> {
            let __carmy_result = (*ping)().await;
            __carmy::into_agent_result(__carmy_result)
        }
    }
};
