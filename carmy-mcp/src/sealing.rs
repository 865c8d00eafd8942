//! What sealed request states (2026-07-28) are made with, shared by the confirmation round
//! trip and a tool's questions: a per-server random key, and the bytes that bind a state to the
//! call it was issued for.

use carmy_core::Fingerprint;
use rmcp::model::RequestStateCodec;
use serde_json::Value;

/// A codec with a fresh random key: states sealed by one server, in one run, open there only.
pub(crate) fn fresh_codec() -> RequestStateCodec {
    let mut key = [0u8; 32];
    // Without randomness there is no safe key; a server that cannot read the OS's RNG cannot
    // run anything else that matters either.
    getrandom::fill(&mut key).expect("the operating system's random number generator");
    RequestStateCodec::new_unchecked(key.to_vec())
}

/// The associated data of a state: `domain` (what kind of state), the tool, the arguments'
/// digest and the principal, each length-prefixed, so a state moved to another call, or used
/// as another kind, fails verification.
pub(crate) fn call_binding(
    domain: &[u8],
    tool: &str,
    arguments: &Value,
    principal: Option<&str>,
) -> Vec<u8> {
    let digest = Fingerprint::of(tool, arguments);
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(domain);
    for part in [
        tool.as_bytes(),
        digest.as_bytes(),
        principal.map_or(&b"\xff"[..], str::as_bytes),
    ] {
        out.extend_from_slice(&(part.len() as u64).to_le_bytes());
        out.extend_from_slice(part);
    }
    out
}
