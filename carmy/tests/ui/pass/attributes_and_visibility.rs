//! Attributes, visibility, raw identifiers, `cfg` and tools defined by `macro_rules!`.

use carmy::prelude::*;

mod tools {
    use carmy::prelude::*;

    /// Visible to the parent module.
    #[tool(effect = "none")]
    #[allow(clippy::unused_async)]
    #[must_use = "a tool's result should be used"]
    pub(crate) async fn r#type(input: String) -> Result<String, AgentError> {
        Ok(input)
    }

    /// Compiled out: nothing generated for it may remain.
    #[cfg(any())]
    #[tool(effect = "none")]
    pub async fn gone() -> Result<(), AgentError> {
        Ok(())
    }

    #[cfg(all())]
    #[tool(effect = "none")]
    pub async fn kept() -> Result<(), AgentError> {
        Ok(())
    }
}

/// Types from `macro_rules!` arrive in invisible groups.
macro_rules! echo_tool {
    ($name:ident, $input:ty, $context:ty, $state:ty) => {
        #[tool(effect = "none")]
        async fn $name(input: $input, _ctx: &$context, _db: $state) -> Result<$input, AgentError> {
            Ok(input)
        }
    };
}

struct Db;
echo_tool!(echo, String, Context, State<Db>);

fn main() {
    use carmy::Tool;
    assert_eq!(<tools::r#type as Tool>::SPEC.name(), "type");
    assert_eq!(
        <tools::r#type as Tool>::SPEC.description_text(),
        "Visible to the parent module."
    );
    Carmy::new()
        .tool(tools::r#type)
        .tool(tools::kept)
        .tool(echo)
        .state(Db)
        .build()
        .unwrap();
    let _ = tools::r#type::call("x".into());
}
