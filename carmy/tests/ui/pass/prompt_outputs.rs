//! Everything a prompt may return: `Messages`, one `Message`, a `Vec<Message>`, a `String`;
//! through a `Result` alias too.

use carmy::{Content, Message, Messages, Role, prelude::*};

mod shop {
    pub type Result<T> = std::result::Result<T, carmy::AgentError>;
}

#[prompt]
async fn messages() -> Result<Messages, AgentError> {
    Ok(Messages::new()
        .with(Message::user("Review this order."))
        .with(Message::resource(
            Role::User,
            Content::text("{}").uri("shop://orders/ord-1"),
        ))
        .with(Message::image(Role::User, vec![0x89], "image/png"))
        .with(Message::assistant("Looking at it."))
        .description("A review"))
}

#[prompt]
async fn one() -> shop::Result<Message> {
    Ok(Message::user("One message."))
}

#[prompt]
async fn several() -> Result<Vec<Message>, AgentError> {
    Ok(vec![Message::user("Hello."), Message::assistant("Hi.")])
}

#[prompt]
async fn text() -> Result<String, AgentError> {
    Ok("One user message.".into())
}

fn main() {
    Carmy::new()
        .prompt(messages)
        .prompt(one)
        .prompt(several)
        .prompt(text)
        .build()
        .unwrap();
}
