//! Links the release `shop` binary with the code that serves MCP first (link/refresh.sh).
//!
//! Serving over stdio runs about 1.7 MiB of the binary's 7.5 MiB of code. Left where the
//! compiler puts it, that code is spread over the whole text segment, and the kernel maps the
//! pages around each one it runs: most of the binary ends up resident. Listed first, it fills a
//! few contiguous pages, which lowers the server's resident memory and its cold start
//! (bench/README.md has the figures). Behaviour is the same either way.

use std::env;

fn main() {
    println!("cargo::rerun-if-changed=link/hot-functions.txt");
    println!("cargo::rerun-if-env-changed=SHOP_LINK_ORDER");
    let release = env::var("PROFILE").as_deref() == Ok("release");
    // The target whose default linker is rust-lld (since Rust 1.90), which takes an ordering
    // file; `SHOP_LINK_ORDER=0` leaves the layout to the linker, for another linker or a
    // comparison.
    let lld = env::var("TARGET").as_deref() == Ok("x86_64-unknown-linux-gnu");
    let wanted = env::var("SHOP_LINK_ORDER").as_deref() != Ok("0");
    if !(release && lld && wanted) {
        return;
    }
    let dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let list = format!("{dir}/link/hot-functions.txt");
    println!("cargo::rustc-link-arg-bin=shop=-Wl,--symbol-ordering-file={list}");
    // Names the build no longer has (after a dependency update) are skipped, not fatal.
    println!("cargo::rustc-link-arg-bin=shop=-Wl,--no-warn-symbol-ordering");
    // Relative relocations packed as bitmaps (glibc 2.36+): the loader reads a few KiB at start
    // instead of 350 KiB of `.rela.dyn`.
    println!("cargo::rustc-link-arg-bin=shop=-Wl,-z,pack-relative-relocs");
}
