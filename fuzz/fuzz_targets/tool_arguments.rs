//! Arbitrary JSON as tool arguments, through validation and decoding. Properties: a call either
//! succeeds or is rejected with `INVALID_ARGUMENTS` (or `CONFIRMATION_REQUIRED` for the tool that
//! needs it) before the tool runs; validation and decoding never disagree (no `INVALID_OUTPUT`,
//! no panic); what the tool decoded re-validates as its output.
#![no_main]

use std::sync::atomic::Ordering;

use carmy_core::{ExecutionStatus, codes};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

thread_local! {
    static RT: tokio::runtime::Runtime = carmy_fuzz::tokio_runtime();
    static FIXTURE: carmy_fuzz::Fixture = carmy_fuzz::fixture();
}

fuzz_target!(|data: &[u8]| {
    let Ok(arguments) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    FIXTURE.with(|fixture| {
        RT.with(|rt| {
            for tool in ["place", "purge", "echo"] {
                let placed = fixture.placed.load(Ordering::SeqCst);
                let outcome = rt.block_on(fixture.runtime.call(tool, arguments.clone()));
                match (outcome.status, &outcome.result) {
                    (ExecutionStatus::Succeeded, Ok(output)) => {
                        assert_ne!(tool, "purge", "ran without a grant: {arguments}");
                        if tool == "place" {
                            assert_eq!(fixture.placed.load(Ordering::SeqCst), placed + 1);
                            serde_json::from_value::<carmy_fuzz::OrderInput>(output.clone())
                                .unwrap_or_else(|error| {
                                    panic!("output does not decode ({error}): {output}")
                                });
                        }
                        if tool == "echo" && arguments.is_object() {
                            assert_eq!(output, &arguments);
                        }
                    }
                    (ExecutionStatus::Rejected, Err(error)) => {
                        let expected =
                            if tool == "purge" && error.code() != codes::INVALID_ARGUMENTS {
                                codes::CONFIRMATION_REQUIRED
                            } else {
                                codes::INVALID_ARGUMENTS
                            };
                        assert_eq!(error.code(), expected, "{tool}({arguments}): {error:?}");
                        assert_eq!(fixture.placed.load(Ordering::SeqCst), placed);
                    }
                    (status, result) => {
                        panic!("{tool}({arguments}) ended {status:?}: {result:?}")
                    }
                }
            }
        })
    });
});
