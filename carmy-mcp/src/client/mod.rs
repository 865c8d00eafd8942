//! One round trip to the client, for everything a request may need from it: a tool's or a
//! prompt's questions ([`ClientAsker`], behind [`carmy_core::Asker`]) and the confirmation of a
//! call the host did not grant ([`ClientApproval`], behind [`carmy_core::Approver`]). A
//! confirmation is a question with a fixed form (`mapping::confirmation_request`), asked under
//! the key [`CONFIRM_INPUT_KEY`](crate::CONFIRM_INPUT_KEY), and travels the same way:
//!
//! - 2025-11-25 (and older) sessions: requests to the client (`elicitation/create`,
//!   `sampling/createMessage`, `roots/list`), awaited in the call (`Channel::Legacy` in `round.rs`).
//! - 2026-07-28: a server may not send requests, so the request ends with an `input_required`
//!   result carrying the questions and a sealed `requestState` (`states.rs`); the client retries
//!   with the answers in `inputResponses` and echoes the state (`Channel::Modern`). The request
//!   runs again and finds each answer under its key: this round's in `inputResponses`, earlier
//!   rounds' (a confirmation among them) in the state. Replicas open each other's states when
//!   they hold the same [`StateKeys`] (`keys.rs`). A state that fails verification is
//!   refused (`-32602`) before anything runs; answers nobody asked for are ignored; an answer
//!   of the wrong shape is asked again.
//!
//! A question the client declared no capability for is not asked: a tool can tell beforehand
//! ([`Context::can_ask`](carmy_core::Context::can_ask)), and asking anyway fails with
//! `CANNOT_ASK`; a confirmation the client cannot put to its user is `CONFIRMATION_REQUIRED`,
//! as without confirmation through the client.
//!
//! What a client can make the server hold, and for how long, is bounded: a call waiting for its
//! user's confirmation (2025-11-25) by `waiting.rs`; a question in flight (2026-07-28) holds
//! nothing, its state travels with the client; redeemed states by the runtime's
//! [`RedemptionStore`](carmy_core::RedemptionStore), the one replicas share.

mod approval;
mod asker;
mod keys;
mod question;
mod round;
mod states;
mod trips;
mod waiting;

pub(crate) use approval::ClientApproval;
pub(crate) use asker::ClientAsker;
pub use keys::{StateKeys, StateKeysError};
pub(crate) use states::Binding;
pub(crate) use trips::RoundTrips;
