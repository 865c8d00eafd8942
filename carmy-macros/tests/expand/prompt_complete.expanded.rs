// `#[prompt]` on the function of prompt_complete.rs, formatted. Regenerate with
// `CARMY_EXPAND=overwrite cargo test -p carmy-macros snapshots`.

#[allow(non_camel_case_types)]
#[derive(
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::fmt::Debug,
    ::core::default::Default,
)]
struct review_order;
impl review_order {
    #[allow(clippy::unused_async)]
    async fn call(input: Review) -> Result<Messages, ShopError> {
        let focus = input.focus.unwrap_or_else(|| "anything unusual".into());
        Ok(
            Messages::new()
                .with(
                    Message::user(
                        format!("Review order {} for {focus}.", input.order_id),
                    ),
                )
                .with(Message::assistant("Looking at it.")),
        )
    }
}
const _: () = {
    use ::carmy::__private as __carmy;
    impl ::core::ops::Deref for review_order {
        type Target = fn(
            Review,
        ) -> __carmy::BoxFuture<'static, Result<Messages, ShopError>>;
        fn deref(&self) -> &Self::Target {
            &((|__carmy_input| __carmy::box_future(review_order::call(__carmy_input)))
                as Self::Target)
        }
    }
    impl __carmy::Prompt for review_order {
        type Input = Review;
        type Output = Messages;
        const SPEC: __carmy::PromptSpec = __carmy::PromptSpec::new("orders.review");
        async fn render(
            &self,
            __carmy_input: Self::Input,
            _: __carmy::Invocation,
        ) -> __carmy::Result<Self::Output, __carmy::AgentError> {
            let __carmy_result = (*review_order)(__carmy_input).await;
            __carmy::into_agent_result(__carmy_result)
        }
        const COMPLETES: &'static [&'static str] = &["order_id", "focus"];
        async fn complete(
            &self,
            __carmy_request: __carmy::CompletionRequest<'_>,
        ) -> __carmy::Result<__carmy::Completions, __carmy::AgentError> {
            match __carmy_request.argument() {
                "order_id" => __carmy::complete_with(order_ids, __carmy_request).await,
                "focus" => {
                    __carmy::complete_with(completion::focuses, __carmy_request).await
                }
                _ => __carmy::Ok(__carmy::Completions::none()),
            }
        }
    }
};
