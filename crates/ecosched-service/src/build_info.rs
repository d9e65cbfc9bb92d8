//! What built the running binary, set at compile time by `build.rs`: one
//! source for `ecosched --version` and the exporter's `ecosched_build_info`.

/// The crate version, e.g. `0.1.0`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git revision the binary was built from (12 hex digits), or
/// `unknown` when built outside a git checkout.
pub const REVISION: &str = env!("ECOSCHED_REVISION");
/// The compiler, as `rustc --version` printed it.
pub const RUSTC: &str = env!("ECOSCHED_RUSTC");
/// `--version`'s text: the version, then the revision and compiler.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("ECOSCHED_REVISION"),
    ", ",
    env!("ECOSCHED_RUSTC"),
    ")"
);
