//! What the function becomes: a tool, a resource or a prompt. The checks they share (the item,
//! the signature, the name, `complete(...)`) speak of the one the user wrote, so their messages
//! take their words from here.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Tool,
    Resource,
    Prompt,
}

impl Kind {
    /// `tool`, `resource`, `prompt`: "a tool must be an `async fn`".
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Resource => "resource",
            Kind::Prompt => "prompt",
        }
    }

    /// The attribute's name, `tool` in `#[tool(name = "...")]`.
    pub(crate) fn attribute(self) -> &'static str {
        self.noun()
    }

    /// The trait to implement by hand for what the attribute cannot express.
    pub(crate) fn trait_path(self) -> &'static str {
        match self {
            Kind::Tool => "carmy::catalog::Tool",
            Kind::Resource => "carmy::catalog::Resource",
            Kind::Prompt => "carmy::catalog::Prompt",
        }
    }

    /// A function the attribute applies to.
    pub(crate) fn example_fn(self) -> &'static str {
        match self {
            Kind::Tool => "async fn search(input: SearchInput) -> Result<SearchOutput, AgentError>",
            Kind::Resource => "async fn product(input: ProductRef) -> Result<String, AgentError>",
            Kind::Prompt => "async fn review_order(input: Review) -> Result<Messages, AgentError>",
        }
    }

    /// Where the input comes from, for each call or read.
    pub(crate) fn input_source(self) -> &'static str {
        match self {
            Kind::Tool => "it is decoded from JSON for each call",
            Kind::Resource => "it is decoded from the URI's variables for each read",
            Kind::Prompt => "it is decoded from the prompt's arguments for each render",
        }
    }

    /// What `T` in `Result<T, E>` may be.
    pub(crate) fn output_rule(self) -> &'static str {
        match self {
            Kind::Tool => "the output (`()` for none)",
            Kind::Resource => "`String` (text), `Vec<u8>` (bytes), `Content` or `Contents`",
            Kind::Prompt => "`Messages`, `Message`, `Vec<Message>` or `String` (one user message)",
        }
    }

    /// A return type to suggest.
    pub(crate) fn example_return(self) -> &'static str {
        match self {
            Kind::Tool => "Result<(), AgentError>",
            Kind::Resource => "Result<String, AgentError>",
            Kind::Prompt => "Result<Messages, AgentError>",
        }
    }

    /// What `complete(...)` completes: a prompt's arguments, a template's variables.
    pub(crate) fn completed(self) -> &'static str {
        match self {
            Kind::Resource => "variable",
            Kind::Tool | Kind::Prompt => "argument",
        }
    }

    /// A `complete(...)` to suggest.
    pub(crate) fn example_complete(self) -> &'static str {
        match self {
            Kind::Resource => "complete(id = product_ids)",
            Kind::Tool | Kind::Prompt => "complete(order_id = order_ids)",
        }
    }
}
