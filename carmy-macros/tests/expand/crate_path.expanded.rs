// `#[tool]` on the function of crate_path.rs, formatted. Regenerate with
// `CARMY_EXPAND=overwrite cargo test -p carmy-macros snapshots`.

#[allow(non_camel_case_types)]
#[derive(
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::fmt::Debug,
    ::core::default::Default,
)]
struct restock;
impl restock {
    #[allow(clippy::unused_async)]
    async fn call(sku: String, stock: State<Stock>) -> Result<u32, AgentError> {
        Ok(stock.add(&sku, 10))
    }
}
const _: () = {
    use ::my_carmy::__private as __carmy;
    impl ::core::ops::Deref for restock {
        type Target = fn(
            String,
            State<Stock>,
        ) -> __carmy::BoxFuture<'static, Result<u32, AgentError>>;
        fn deref(&self) -> &Self::Target {
            &((|__carmy_input, __carmy_state0| __carmy::box_future(
                restock::call(__carmy_input, __carmy_state0),
            )) as Self::Target)
        }
    }
    impl __carmy::Tool for restock {
        type Input = String;
        type Output = u32;
        const SPEC: __carmy::ToolSpec = __carmy::ToolSpec::new(
            "restock",
            __carmy::Effect::Write,
        );
        fn requirements(__carmy_requirements: &mut __carmy::Requirements) {
            <State<Stock> as __carmy::StateParam>::require(__carmy_requirements);
        }
        async fn run(
            &self,
            __carmy_input: Self::Input,
            __carmy_invocation: __carmy::Invocation,
        ) -> __carmy::Result<Self::Output, __carmy::AgentError> {
            let __carmy_result = (*restock)(
                    __carmy_input,
                    <State<Stock> as __carmy::StateParam>::get(&__carmy_invocation),
                )
                .await;
            __carmy::into_agent_result(__carmy_result)
        }
    }
};
