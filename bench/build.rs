//! Links `shop-tuned` (and only it) with the code that serves MCP first (tuned/refresh.sh).
//!
//! Serving over stdio runs a small part of the shop's code. Left where the compiler puts it,
//! that code is spread over the whole text segment, and the kernel maps the pages around each
//! one it runs: most of the binary ends up resident. Listed first, it fills a few contiguous
//! pages, which lowers the server's resident memory and its cold start (bench/README.md has the
//! figures). Behaviour is the same either way. This lives in the benchmarks, not in the
//! example: `shop` stays the plain build a Carmy user gets for their own binary, and
//! `mcp-load` measures the two side by side.

use std::env;

fn main() {
    println!("cargo::rerun-if-changed=tuned/hot-functions.txt");
    let release = env::var("PROFILE").as_deref() == Ok("release");
    // The target whose default linker is rust-lld (since Rust 1.90), which takes an ordering
    // file; elsewhere the layout is left to the linker.
    let lld = env::var("TARGET").as_deref() == Ok("x86_64-unknown-linux-gnu");
    if !(release && lld) {
        return;
    }
    let dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let list = format!("{dir}/tuned/hot-functions.txt");
    println!("cargo::rustc-link-arg-bin=shop-tuned=-Wl,--symbol-ordering-file={list}");
    // Names the build no longer has (after a dependency update) are skipped, not fatal.
    println!("cargo::rustc-link-arg-bin=shop-tuned=-Wl,--no-warn-symbol-ordering");
    // Relative relocations packed as bitmaps (glibc 2.36+): the loader reads a few KiB at start
    // instead of hundreds of KiB of `.rela.dyn`.
    println!("cargo::rustc-link-arg-bin=shop-tuned=-Wl,-z,pack-relative-relocs");
}
