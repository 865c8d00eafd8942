// `#[prompt]` on the function of prompt.rs, formatted. Regenerate with
// `CARMY_EXPAND=overwrite cargo test -p carmy-macros snapshots`.

/// Ask for a review of one order.
#[allow(non_camel_case_types)]
#[derive(
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::fmt::Debug,
    ::core::default::Default,
)]
struct review_order;
impl review_order {
    /// Ask for a review of one order.
    #[allow(clippy::unused_async)]
    async fn call(
        input: Review,
        ctx: &Context,
        orders: State<Orders>,
    ) -> Result<String, AgentError> {
        let order = orders.get(&input.order_id)?;
        let reader = ctx.principal().unwrap_or("a customer");
        Ok(format!("Review order {} for {reader}: {order:?}", input.order_id))
    }
}
const _: () = {
    use ::carmy::__private as __carmy;
    impl ::core::ops::Deref for review_order {
        type Target = fn(
            Review,
            &Context,
            State<Orders>,
        ) -> __carmy::BoxFuture<'_, Result<String, AgentError>>;
        fn deref(&self) -> &Self::Target {
            &((|__carmy_input, __carmy_context, __carmy_state0| __carmy::box_future(
                review_order::call(__carmy_input, __carmy_context, __carmy_state0),
            )) as Self::Target)
        }
    }
    impl __carmy::Prompt for review_order {
        type Input = Review;
        type Output = String;
        const SPEC: __carmy::PromptSpec = __carmy::PromptSpec::new("review_order")
            .title("Review an order")
            .description("Ask for a review of one order.")
            .timeout(::core::time::Duration::from_millis(5000));
        fn requirements(__carmy_requirements: &mut __carmy::Requirements) {
            <State<Orders> as __carmy::StateParam>::require(__carmy_requirements);
        }
        async fn render(
            &self,
            __carmy_input: Self::Input,
            __carmy_invocation: __carmy::Invocation,
        ) -> __carmy::Result<Self::Output, __carmy::AgentError> {
            let __carmy_result = (*review_order)(
                    __carmy_input,
                    <Context as __carmy::ContextParam>::borrowed(&__carmy_invocation),
                    <State<Orders> as __carmy::StateParam>::get(&__carmy_invocation),
                )
                .await;
            __carmy::into_agent_result(__carmy_result)
        }
    }
};
