//! Attributes, visibility, raw identifiers, `cfg` and tools defined by `macro_rules!`.

use carmy::prelude::*;

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

mod tools {
    use carmy::prelude::*;

    use super::Text;

    /// Visible to the parent module.
    #[tool(effect = "none")]
    #[allow(clippy::unused_async)]
    #[must_use = "a tool's result should be used"]
    pub(crate) async fn r#type(input: Text) -> Result<String, AgentError> {
        Ok(input.text)
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
echo_tool!(echo, Text, Context, State<Db>);

fn main() {
    use carmy::catalog::Tool;
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
    let _ = tools::r#type::call(Text { text: "x".into() });
}
