// `#[tool]` on the function of every_key.rs, formatted. Regenerate with
// `CARMY_EXPAND=overwrite cargo test -p carmy-macros snapshots`.

#[cfg(feature = "orders")]
/// Ignored: `description` wins over the doc comment.
#[allow(non_camel_case_types)]
#[derive(
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::fmt::Debug,
    ::core::default::Default,
)]
pub(crate) struct cancel_order;
#[cfg(feature = "orders")]
impl cancel_order {
    /// Ignored: `description` wins over the doc comment.
    #[allow(clippy::unused_async)]
    #[tracing::instrument(skip(ctx))]
    pub(crate) async fn call(order: OrderId, ctx: Context) -> Result<(), ShopError> {
        orders::cancel(order, ctx.principal()).await
    }
}
#[cfg(feature = "orders")]
const _: () = {
    use ::carmy::__private as __carmy;
    impl ::core::ops::Deref for cancel_order {
        type Target = fn(
            OrderId,
            Context,
        ) -> __carmy::BoxFuture<'static, Result<(), ShopError>>;
        fn deref(&self) -> &Self::Target {
            &((|__carmy_input, __carmy_context| __carmy::box_future(
                cancel_order::call(__carmy_input, __carmy_context),
            )) as Self::Target)
        }
    }
    impl __carmy::Tool for cancel_order {
        type Input = OrderId;
        type Output = ();
        const SPEC: __carmy::ToolSpec = __carmy::ToolSpec::new(
                "orders.cancel",
                __carmy::Effect::Destructive,
            )
            .title("Cancel an order")
            .description("Cancels an order for good.")
            .idempotent(true)
            .parallel_safe(false)
            .confirmation(__carmy::Confirmation::Required)
            .timeout(::core::time::Duration::from_millis(1500))
            .task(__carmy::TaskSupport::Optional)
            .task_after(::core::time::Duration::from_millis(2000));
        async fn run(
            &self,
            __carmy_input: Self::Input,
            __carmy_invocation: __carmy::Invocation,
        ) -> __carmy::Result<Self::Output, __carmy::AgentError> {
            let __carmy_result = (*cancel_order)(
                    __carmy_input,
                    <Context as __carmy::ContextParam>::owned(&__carmy_invocation),
                )
                .await;
            __carmy::into_agent_result(__carmy_result)
        }
    }
};
