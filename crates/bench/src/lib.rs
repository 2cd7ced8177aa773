//! Criterion benchmarks of Tributary, kept in a package of their own so that `cargo test`
//! never compiles criterion. The library is empty; the benchmarks are in `benches/`:
//!
//! - `codec`: throughput of the erasure codes (results: `docs/codec.md`),
//!   `cargo bench -p tributary-bench --bench codec`;
//! - `protect`: what packet protection and the handshake cost the core (results:
//!   `docs/performance.md`), `cargo bench -p tributary-bench --bench protect`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
