// `#[resource]` on the function of resource_template.rs, formatted. Regenerate with
// `CARMY_EXPAND=overwrite cargo test -p carmy-macros snapshots`.

/// One product, as JSON.
#[allow(non_camel_case_types)]
#[derive(
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::fmt::Debug,
    ::core::default::Default,
)]
struct product_json;
impl product_json {
    /// One product, as JSON.
    #[allow(clippy::unused_async)]
    async fn call(input: ProductRef, db: State<Db>) -> Result<Content, ShopError> {
        let product = db.product(&input.id).ok_or(ShopError::NotFound)?;
        Ok(Content::json(&product)?)
    }
}
const _: () = {
    use ::carmy::__private as __carmy;
    impl ::core::ops::Deref for product_json {
        type Target = fn(
            ProductRef,
            State<Db>,
        ) -> __carmy::BoxFuture<'static, Result<Content, ShopError>>;
        fn deref(&self) -> &Self::Target {
            &((|__carmy_input, __carmy_state0| __carmy::box_future(
                product_json::call(__carmy_input, __carmy_state0),
            )) as Self::Target)
        }
    }
    impl __carmy::Resource for product_json {
        type Input = ProductRef;
        type Output = Content;
        const SPEC: __carmy::ResourceSpec = __carmy::ResourceSpec::new(
                "product",
                "shop://products/{id}",
            )
            .description("One product, as JSON.")
            .mime_type("application/json");
        fn requirements(__carmy_requirements: &mut __carmy::Requirements) {
            <State<Db> as __carmy::StateParam>::require(__carmy_requirements);
        }
        async fn read(
            &self,
            __carmy_input: Self::Input,
            __carmy_invocation: __carmy::Invocation,
        ) -> __carmy::Result<Self::Output, __carmy::AgentError> {
            let __carmy_result = (*product_json)(
                    __carmy_input,
                    <State<Db> as __carmy::StateParam>::get(&__carmy_invocation),
                )
                .await;
            __carmy::into_agent_result(__carmy_result)
        }
    }
};
