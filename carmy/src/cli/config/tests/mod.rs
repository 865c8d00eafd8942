//! Each precedence rule and each error, on the real command line's flags.

mod documented;
mod environment;
mod errors;
mod files;
mod layers;
mod redaction;
mod sections;
mod support;
