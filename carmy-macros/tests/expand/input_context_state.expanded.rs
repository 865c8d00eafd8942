// `#[tool]` on the function of input_context_state.rs, formatted. Regenerate with
// `CARMY_EXPAND=overwrite cargo test -p carmy-macros snapshots`.

/// Search the product catalog.
#[allow(non_camel_case_types)]
#[derive(
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::fmt::Debug,
    ::core::default::Default,
)]
pub struct search;
impl search {
    /// Search the product catalog.
    #[allow(clippy::unused_async)]
    pub async fn call(
        input: SearchInput,
        ctx: &Context,
        db: State<Db>,
    ) -> Result<SearchOutput, AgentError> {
        let skus = db.search(&input.query, ctx.principal());
        Ok(SearchOutput { skus })
    }
}
const _: () = {
    use ::carmy::__private as __carmy;
    impl ::core::ops::Deref for search {
        type Target = fn(
            SearchInput,
            &Context,
            State<Db>,
        ) -> __carmy::BoxFuture<'_, Result<SearchOutput, AgentError>>;
        fn deref(&self) -> &Self::Target {
            &((|__carmy_input, __carmy_context, __carmy_state0| __carmy::box_future(
                search::call(__carmy_input, __carmy_context, __carmy_state0),
            )) as Self::Target)
        }
    }
    impl __carmy::Tool for search {
        type Input = SearchInput;
        type Output = SearchOutput;
        const SPEC: __carmy::ToolSpec = __carmy::ToolSpec::new(
                "search",
                __carmy::Effect::Read,
            )
            .description("Search the product catalog.")
            .idempotent(true);
        fn requirements(__carmy_requirements: &mut __carmy::Requirements) {
            <State<Db> as __carmy::StateParam>::require(__carmy_requirements);
        }
        async fn run(
            &self,
            __carmy_input: Self::Input,
            __carmy_invocation: __carmy::Invocation,
        ) -> __carmy::Result<Self::Output, __carmy::AgentError> {
            let __carmy_result = (*search)(
                    __carmy_input,
                    <Context as __carmy::ContextParam>::borrowed(&__carmy_invocation),
                    <State<Db> as __carmy::StateParam>::get(&__carmy_invocation),
                )
                .await;
            __carmy::into_agent_result(__carmy_result)
        }
    }
};
